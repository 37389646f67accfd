"""Which indexing and shape forms share memory with their source: MXNet 1.9.1's rule
(NOTE [View or copy] in gpunda/ndarray/indexing.py), form by form.

Every row of FORMS was recorded from real MXNet 1.9.1 (/work/mxref) by this procedure,
the ``np`` rows after ``mx.npx.set_np()``::

    a = nd.array(numpy.arange(size, dtype='float32').reshape(shape))  # or mx.np.array
    r = eval(expr)
    r[() if r.ndim == 0 else Ellipsis] = -1
    written = [i for i, v in enumerate(a.asnumpy().ravel()) if v != i]

``written`` lists the flat positions of ``a`` a write to the result reaches: empty for a
copy, every selected element for a view. Two rows as MXNet printed them::

    >>> a = mx.nd.zeros((4,)); a[1][:] = 5; a            # a[1] is a (1,)-shaped view
    [0. 5. 0. 0.]
    >>> a = mx.nd.zeros((2, 3, 4)); a[:, 1][:] = -1; a.sum()   # a[:, 1] is a copy
    [0.]
"""
import numpy as onp
import pytest

import gpunda as mx
from gpunda.ndarray import indexing

nd = mx.nd
np = mx.np
S3 = (2, 3, 4)

# (kind, expr, input shape, result shape (MXNet's), flat positions a write reaches)
FORMS = [
    ('nd', 'a[1]', (4,), (1,), range(1, 2)),
    ('nd', 'a[-1]', (4,), (1,), range(3, 4)),
    ('nd', 'a[1:3]', (4,), (2,), range(1, 3)),
    ('nd', 'a[::2]', (4,), (2,), ()),
    ('nd', 'a[1:3:1]', (4,), (2,), range(1, 3)),
    ('nd', 'a[-3:-1]', (4,), (2,), range(1, 3)),
    ('nd', 'a[3:0:-1]', (4,), (3,), ()),
    ('nd', 'a[:]', (4,), (4,), range(0, 4)),
    ('nd', 'a[(1,)]', (4,), (1,), range(1, 2)),
    ('nd', 'a[...]', (4,), (4,), range(0, 4)),
    ('nd', 'a[None]', (4,), (1, 4), range(0, 4)),
    ('nd', 'a[[1, 2]]', (4,), (2,), ()),
    ('nd', 'a[nd.array([1, 2])]', (4,), (2,), ()),
    ('nd', 'a[onp.array([1, 2])]', (4,), (2,), ()),
    ('nd', 'a[1][:]', (4,), (1,), range(1, 2)),
    ('nd', 'a[1]', (2, 3, 4), (3, 4), range(12, 24)),
    ('nd', 'a[-1]', (2, 3, 4), (3, 4), range(12, 24)),
    ('nd', 'a[0:1]', (2, 3, 4), (1, 3, 4), range(0, 12)),
    ('nd', 'a[-1:]', (2, 3, 4), (1, 3, 4), range(12, 24)),
    ('nd', 'a[:]', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a[::2]', (2, 3, 4), (1, 3, 4), range(0, 12)),
    ('nd', 'a[::-1]', (2, 3, 4), (2, 3, 4), ()),
    ('nd', 'a[1, 2]', (2, 3, 4), (4,), range(20, 24)),
    ('nd', 'a[1, 2, 3]', (2, 3, 4), (1,), range(23, 24)),
    ('nd', 'a[1, 1:3]', (2, 3, 4), (2, 4), range(16, 24)),
    ('nd', 'a[0, :]', (2, 3, 4), (3, 4), range(0, 12)),
    ('nd', 'a[1, :, 2]', (2, 3, 4), (3,), ()),
    ('nd', 'a[0:2, 0:3]', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a[:, 1]', (2, 3, 4), (2, 4), ()),
    ('nd', 'a[:, 1:2]', (2, 3, 4), (2, 1, 4), ()),
    ('nd', 'a[:, :, 1:2]', (2, 3, 4), (2, 3, 1), ()),
    ('nd', 'a[..., 1]', (2, 3, 4), (2, 3), ()),
    ('nd', 'a[1, ...]', (2, 3, 4), (3, 4), range(12, 24)),
    ('nd', 'a[...]', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a[None]', (2, 3, 4), (1, 2, 3, 4), range(0, 24)),
    ('nd', 'a[1, None]', (2, 3, 4), (1, 3, 4), range(12, 24)),
    ('nd', 'a[:, None]', (2, 3, 4), (2, 1, 3, 4), range(0, 24)),
    ('nd', 'a[[0, 1]]', (2, 3, 4), (2, 3, 4), ()),
    ('nd', 'a[[0, 1], [1, 2]]', (2, 3, 4), (2, 4), ()),
    ('nd', 'a[1, [0, 2]]', (2, 3, 4), (2, 4), ()),
    ('nd', 'a[nd.array([1])]', (2, 3, 4), (1, 3, 4), ()),
    ('nd', 'a[1][2]', (2, 3, 4), (4,), range(20, 24)),
    ('nd', 'a[1][:, 1]', (2, 3, 4), (3,), ()),
    ('nd', 'a[0:1][0]', (2, 3, 4), (3, 4), range(0, 12)),
    ('nd', 'a[:, 1]', (1, 3, 4), (1, 4), range(4, 8)),
    ('nd', 'a[:, 0]', (2, 1, 4), (2, 4), range(0, 8)),
    ('nd', 'a[:, :, 0]', (2, 3, 1), (2, 3), range(0, 6)),
    ('nd', 'a[0, 1, :]', (2, 3, 4), (4,), range(4, 8)),
    ('nd', 'a[1:2, 0]', (2, 3, 4), (1, 4), range(12, 16)),
    ('nd', 'a[0, ::2]', (2, 3, 4), (2, 4), ()),
    ('nd', 'a[(slice(0, 1),)]', (2, 3, 4), (1, 3, 4), range(0, 12)),
    ('nd', 'a[-1:, -1]', (2, 3, 4), (1, 4), range(20, 24)),
    ('nd', 'a[-1, -2]', (2, 3, 4), (4,), range(16, 20)),
    ('nd', 'a[1::5]', (2, 3, 4), (1, 3, 4), range(12, 24)),
    ('nd', 'a[:, :, :]', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a[0:2:1]', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a[None, 1]', (2, 3, 4), (1, 3, 4), range(12, 24)),
    ('nd', 'a[:, 0]', (3, 1), (3,), range(0, 3)),
    ('nd', 'a[1, None, 1:3]', (3, 4), (1, 2), range(5, 7)),
    ('nd', 'a.reshape((6, 4))[2:4]', (2, 3, 4), (2, 4), range(8, 16)),
    ('nd', 'a[1:2].reshape((-1,))', (2, 3, 4), (12,), range(12, 24)),
    ('nd', 'a._at(1)', (2, 3, 4), (3, 4), range(12, 24)),
    ('nd', 'a._at(-1)', (2, 3, 4), (3, 4), range(12, 24)),
    ('nd', 'a._at(1)', (4,), (1,), range(1, 2)),
    ('nd', 'a._slice(0, 1)', (2, 3, 4), (1, 3, 4), range(0, 12)),
    ('nd', 'nd.slice_axis(a, axis=0, begin=0, end=1)', (2, 3, 4), (1, 3, 4), ()),
    ('nd', 'nd.slice_axis(a, axis=1, begin=0, end=1)', (2, 3, 4), (2, 1, 4), ()),
    ('nd', 'nd.slice(a, begin=(0,), end=(1,))', (2, 3, 4), (1, 3, 4), ()),
    ('nd', 'a.reshape((6, 4))', (2, 3, 4), (6, 4), range(0, 24)),
    ('nd', 'a.reshape(-1)', (2, 3, 4), (24,), range(0, 24)),
    ('nd', 'a.reshape((0, -1))', (2, 3, 4), (2, 12), range(0, 24)),
    ('nd', 'a.reshape((-3, 0))', (2, 3, 4), (6, 4), range(0, 24)),
    ('nd', 'a.reshape(shape=(6, 4))', (2, 3, 4), (6, 4), range(0, 24)),
    ('nd', 'a.reshape((0, -1), reverse=True)', (2, 3, 4), (3, 8), range(0, 24)),
    ('nd', 'nd.reshape(a, shape=(6, 4))', (2, 3, 4), (6, 4), ()),
    ('nd', 'a.reshape_like(nd.zeros((6, 4)))', (2, 3, 4), (6, 4), ()),
    ('nd', 'a.flatten()', (2, 3, 4), (2, 12), ()),
    ('nd', 'a.flatten(inplace=True)', (2, 3, 4), (2, 12), range(0, 24)),
    ('nd', 'a.expand_dims(0)', (2, 3, 4), (1, 2, 3, 4), ()),
    ('nd', 'a.expand_dims(0, inplace=True)', (2, 3, 4), (1, 2, 3, 4), range(0, 24)),
    ('nd', 'nd.expand_dims(a, axis=0)', (2, 3, 4), (1, 2, 3, 4), ()),
    ('nd', 'a.squeeze()', (1, 3, 4), (3, 4), ()),
    ('nd', 'a.squeeze(inplace=True)', (1, 3, 4), (3, 4), range(0, 12)),
    ('nd', 'a.T', (2, 3, 4), (4, 3, 2), ()),
    ('nd', 'a.transpose()', (2, 3, 4), (4, 3, 2), ()),
    ('nd', 'a.detach()', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a.copy()', (2, 3, 4), (2, 3, 4), ()),
    ('nd', 'a.as_in_context(a.context)', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', "a.astype('float32', copy=False)", (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a.as_np_ndarray()', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('nd', 'a', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('np', 'a[1]', (4,), (), range(1, 2)),
    ('np', 'a[-1]', (4,), (), range(3, 4)),
    ('np', 'a[1:3]', (4,), (2,), range(1, 3)),
    ('np', 'a[::2]', (4,), (2,), ()),
    ('np', 'a[:]', (4,), (4,), range(0, 4)),
    ('np', 'a[...]', (4,), (4,), range(0, 4)),
    ('np', 'a[None]', (4,), (1, 4), range(0, 4)),
    ('np', 'a[[1, 2]]', (4,), (2,), ()),
    ('np', 'a[a > 1]', (4,), (2,), ()),
    ('np', 'a[()]', (4,), (4,), range(0, 4)),
    ('np', 'a[1]', (2, 3, 4), (3, 4), range(12, 24)),
    ('np', 'a[-1]', (2, 3, 4), (3, 4), range(12, 24)),
    ('np', 'a[0:1]', (2, 3, 4), (1, 3, 4), range(0, 12)),
    ('np', 'a[:]', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('np', 'a[::2]', (2, 3, 4), (1, 3, 4), range(0, 12)),
    ('np', 'a[::-1]', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'a[1, 2]', (2, 3, 4), (4,), range(20, 24)),
    ('np', 'a[1, 2, 3]', (2, 3, 4), (), range(23, 24)),
    ('np', 'a[1, 1:3]', (2, 3, 4), (2, 4), range(16, 24)),
    ('np', 'a[:, 1]', (2, 3, 4), (2, 4), ()),
    ('np', 'a[:, 1:2]', (2, 3, 4), (2, 1, 4), ()),
    ('np', 'a[..., 1]', (2, 3, 4), (2, 3), ()),
    ('np', 'a[1, ...]', (2, 3, 4), (3, 4), range(12, 24)),
    ('np', 'a[...]', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('np', 'a[None]', (2, 3, 4), (1, 2, 3, 4), range(0, 24)),
    ('np', 'a[1, None]', (2, 3, 4), (1, 3, 4), range(12, 24)),
    ('np', 'a[[0, 1]]', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'a[[0, 1], [1, 2]]', (2, 3, 4), (2, 4), ()),
    ('np', 'a[a > 5]', (2, 3, 4), (18,), ()),
    ('np', 'a[np.array([True, False])]', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'a[np.array([1])]', (2, 3, 4), (1, 3, 4), ()),
    ('np', 'a[:, 1]', (1, 3, 4), (1, 4), range(4, 8)),
    ('np', 'a[:, 0]', (2, 1, 4), (2, 4), range(0, 8)),
    ('np', 'a[1][2]', (2, 3, 4), (4,), range(20, 24)),
    ('np', 'a[1:2, 0]', (2, 3, 4), (1, 4), range(12, 16)),
    ('np', 'a[0, ::2]', (2, 3, 4), (2, 4), ()),
    ('np', 'a[None, 1]', (2, 3, 4), (1, 3, 4), range(12, 24)),
    ('np', 'a[(2,)]', (4,), (), range(2, 3)),
    ('np', 'a[-1, -2]', (2, 3, 4), (4,), range(16, 20)),
    ('np', 'np.flip(a, 0)', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'np.rollaxis(a, 2)', (2, 3, 4), (4, 2, 3), ()),
    ('np', 'a._at(1)', (2, 3, 4), (3, 4), range(12, 24)),
    ('np', 'a._slice(0, 1)', (2, 3, 4), (1, 3, 4), range(0, 12)),
    ('np', 'a.reshape(6, 4)', (2, 3, 4), (6, 4), ()),
    ('np', 'a.reshape(-1)', (2, 3, 4), (24,), ()),
    ('np', 'np.reshape(a, (6, 4))', (2, 3, 4), (6, 4), ()),
    ('np', 'a.reshape_view(6, 4)', (2, 3, 4), (6, 4), range(0, 24)),
    ('np', 'a.T', (2, 3, 4), (4, 3, 2), ()),
    ('np', 'a.transpose()', (2, 3, 4), (4, 3, 2), ()),
    ('np', 'np.transpose(a)', (2, 3, 4), (4, 3, 2), ()),
    ('np', 'np.ravel(a)', (2, 3, 4), (24,), ()),
    ('np', 'a.flatten()', (2, 3, 4), (24,), ()),
    ('np', 'a.squeeze()', (1, 3, 4), (3, 4), ()),
    ('np', 'np.squeeze(a)', (1, 3, 4), (3, 4), ()),
    ('np', 'np.expand_dims(a, 0)', (2, 3, 4), (1, 2, 3, 4), ()),
    ('np', 'a.as_nd_ndarray()', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('np', 'a.copy()', (2, 3, 4), (2, 3, 4), ()),
    ('np', "a.astype('float32', copy=False)", (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('np', 'a.detach()', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('np', 'a', (2, 3, 4), (2, 3, 4), range(0, 24)),
    ('np', 'np.swapaxes(a, 0, 1)', (2, 3, 4), (3, 2, 4), ()),
    ('np', 'np.moveaxis(a, 0, 1)', (2, 3, 4), (3, 2, 4), ()),
    ('np', 'np.atleast_1d(a)', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'np.split(a, 2)[0]', (2, 3, 4), (1, 3, 4), ()),
    ('np', 'npx.reshape(a, (-2, -1))', (2, 3, 4), (2, 12), ()),
    ('np', 'a.swapaxes(0, 1)', (2, 3, 4), (3, 2, 4), ()),
    ('np', 'a.transpose(1, 0, 2)', (2, 3, 4), (3, 2, 4), ()),
    ('np', 'np.reshape(a, (2, 3, 4))', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'np.transpose(a, (0, 1, 2))', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'np.moveaxis(a, 0, 0)', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'np.expand_dims(a, 0)[0]', (2, 3, 4), (2, 3, 4), ()),
    ('np', 'a[0].T', (2, 3, 4), (4, 3), ()),
]


@pytest.fixture
def np_semantics():
    mx.npx.set_np()
    try:
        yield
    finally:
        mx.npx.reset_np()


def _make(kind, shape):
    v = onp.arange(int(onp.prod(shape)), dtype="float32").reshape(shape)
    return nd.array(v) if kind == "nd" else np.array(v)


def _form(kind, expr, shape):
    a = _make(kind, shape)
    return a, eval(expr, {"nd": nd, "np": np, "npx": mx.npx, "onp": onp, "a": a})


def _check(kind, expr, shape_in, shape_out, written):
    size = int(onp.prod(shape_in))
    orig = onp.arange(size, dtype="float32")
    hit = onp.zeros(size, bool)
    hit[list(written)] = True

    # a write through the result reaches exactly the recorded positions of the source
    a, r = _form(kind, expr, shape_in)
    assert r.shape == shape_out
    r[() if r.ndim == 0 else Ellipsis] = -1
    onp.testing.assert_array_equal(a.asnumpy().ravel(), onp.where(hit, -1, orig))

    # so does an in-place operator on the result
    a, r = _form(kind, expr, shape_in)
    r += 100
    onp.testing.assert_array_equal(a.asnumpy().ravel(), onp.where(hit, orig + 100, orig))

    # a write to the source after the result was made: a view reads it back, a copy not
    a, r = _form(kind, expr, shape_in)
    before = r.asnumpy().copy()
    a[...] = 7
    want = onp.full(before.shape, 7, "float32") if written else before
    onp.testing.assert_array_equal(r.asnumpy(), want)


@pytest.mark.parametrize("kind, expr, shape_in, shape_out, written",
                         [f for f in FORMS if f[0] == "nd"], ids=lambda x: str(x))
def test_nd_form_view_or_copy_as_mxnet(kind, expr, shape_in, shape_out, written):
    _check(kind, expr, shape_in, shape_out, written)


@pytest.mark.parametrize("kind, expr, shape_in, shape_out, written",
                         [f for f in FORMS if f[0] == "np"], ids=lambda x: str(x))
def test_np_form_view_or_copy_as_mxnet(np_semantics, kind, expr, shape_in, shape_out, written):
    _check(kind, expr, shape_in, shape_out, written)


def test_issue_examples():
    # MXNet 1.9.1: a[1][:] = 5 fills a[1] (InsightFace's FaceImageIter fills labels so)
    a = nd.zeros((4,))
    a[1][:] = 5
    onp.testing.assert_array_equal(a.asnumpy(), [0, 5, 0, 0])
    a = nd.zeros((2, 3, 4))
    a[:, 1][:] = -1
    assert a.asnumpy().sum() == 0
    # setitem through a view of a view (MXNet 1.9.1 printed 522.0 and 606.0)
    a = nd.arange(24).reshape((2, 3, 4))
    a[1][:, 2] = 100
    assert a.sum().asscalar() == 522.0
    a = nd.arange(24).reshape((2, 3, 4))
    a[1][1][:] = 100
    assert a.sum().asscalar() == 606.0


def test_views_follow_later_writes_to_the_source():
    # as MXNet 1.9.1 printed them, for v = a[1] of nd.arange(24).reshape((2, 3, 4))
    a = nd.arange(24).reshape((2, 3, 4))
    v = a[1]
    a += 1
    onp.testing.assert_array_equal(v.asnumpy().ravel(), onp.arange(13, 25))
    nd.elemwise_add(a, a, out=a)
    onp.testing.assert_array_equal(v.asnumpy().ravel(), 2 * onp.arange(13, 25))
    a = nd.arange(24).reshape((2, 3, 4))
    v = a[1]
    nd.relu(-v, out=v)      # an op writing into a view writes into the source
    onp.testing.assert_array_equal(a.asnumpy().ravel(), onp.r_[onp.arange(12), onp.zeros(12)])


def test_integer_index_under_np_shape_is_a_0d_view():
    # MXNet 1.9.1: under np_shape(True), nd a[1] of a 1-D array has shape () and is a view
    with mx.util.np_shape(True):
        a = nd.array([0, 1, 2, 3])
        r = a[1]
        assert r.shape == ()
        r[()] = -5
        b = nd.arange(24).reshape((2, 3, 4))
        s = b[1, 2, 3]
        assert s.shape == ()
        s[()] = -5
        assert a.asnumpy()[1] == -5 and b.asnumpy()[1, 2, 3] == -5


@pytest.mark.parametrize("make", [lambda: nd.zeros((2, 3)), lambda: np.zeros((2, 3))],
                         ids=["nd", "np"])
def test_full_slice_and_empty_tuple_give_the_array_itself(make):
    # MXNet 1.9.1: ``x[:] is x`` and ``x[()] is x`` (nd and np)
    a = make()
    assert a[:] is a and a[()] is a and a[::1] is a
    assert a[0:] is not a and a[::2] is not a


def test_at_and_slice_errors():
    a = nd.zeros((3, 2))
    with pytest.raises(IndexError):
        a._at(3)
    with pytest.raises(IndexError):
        a._at(-4)
    assert a._slice(-2, None).shape == (2, 2)   # negative bounds count from the end
    assert a._slice(1, 10).shape == (2, 2)      # and are clipped


@pytest.mark.parametrize("key", [1, (1, 2), (slice(None), 1), (slice(0, 2), 0),
                                 (Ellipsis, 2), (None, 1), (slice(None, None, 2),),
                                 (slice(0, 1), slice(None)), (2, slice(1, 3))], ids=str)
def test_select_rule_on_a_source_that_is_not_c_contiguous(key):
    # a backend source in another layout (F-ordered) cannot use the result's contiguity
    # flag; the rule on the key decides, as the flag does for a C-ordered source
    c = onp.arange(12.0).reshape(3, 4)
    f = onp.asfortranarray(c)
    _, view_c = indexing.select(c, key, c[key], False)
    r, view_f = indexing.select(f, key, f[key], False)
    assert view_f == view_c
    assert onp.shares_memory(r, f) == view_f
    onp.testing.assert_array_equal(onp.asarray(r).reshape(-1), onp.asarray(c[key]).reshape(-1))
