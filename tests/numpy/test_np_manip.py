"""mx.np manipulation functions against official NumPy, and their index-map gradients
(NOTE [Index-map gradients]) against finite differences."""
import numpy as onp
import pytest

from gpunda import numpy as np
from gpunda import autograd as ag
from gpunda.base import MXNetError
from _np_util import mxa, check_grad

A = onp.arange(12, dtype=onp.float64).reshape(3, 4) + 0.5
B3 = onp.arange(24, dtype=onp.float64).reshape(2, 3, 4)

CASES = [
    ("reshape", lambda m, a: m.reshape(a, (4, -1)), A),
    ("ravel", lambda m, a: m.ravel(a), A),
    ("transpose", lambda m, a: m.transpose(a, (2, 0, 1)), B3),
    ("transpose0", lambda m, a: m.transpose(a), B3),
    ("swapaxes", lambda m, a: m.swapaxes(a, 0, 2), B3),
    ("moveaxis", lambda m, a: m.moveaxis(a, 0, -1), B3),
    ("rollaxis", lambda m, a: m.rollaxis(a, 2), B3),
    ("expand_dims", lambda m, a: m.expand_dims(a, 1), A),
    ("squeeze", lambda m, a: m.squeeze(a.reshape(3, 1, 4) if m is onp else m.reshape(a, (3, 1, 4))), A),
    ("broadcast_to", lambda m, a: m.broadcast_to(a[:1] if m is onp else a[:1], (2, 3, 4)), A),
    ("tile", lambda m, a: m.tile(a, (2, 1, 2)), A),
    ("repeat", lambda m, a: m.repeat(a, 2, axis=1), A),
    ("repeat_flat", lambda m, a: m.repeat(a, 3), A),
    ("flip", lambda m, a: m.flip(a, 1), A),
    ("flip_all", lambda m, a: m.flip(a), B3),
    ("flipud", lambda m, a: m.flipud(a), A),
    ("fliplr", lambda m, a: m.fliplr(a), A),
    ("roll", lambda m, a: m.roll(a, 2, axis=1), A),
    ("roll_flat", lambda m, a: m.roll(a, -5), A),
    ("rot90", lambda m, a: m.rot90(a, 3), A),
    ("pad_const", lambda m, a: m.pad(a, ((1, 2), (0, 1)), mode="constant", constant_values=2.5), A),
    ("pad_edge", lambda m, a: m.pad(a, ((1, 1), (2, 0)), mode="edge"), A),
    ("pad_reflect", lambda m, a: m.pad(a, ((1, 1), (2, 1)), mode="reflect"), A),
    ("tril", lambda m, a: m.tril(a, -1), A),
    ("triu", lambda m, a: m.triu(a, 1), A),
    ("diag", lambda m, a: m.diag(a, 1), A),
    ("diag_vec", lambda m, a: m.diag(a[0], -1), A),
    ("diagflat", lambda m, a: m.diagflat(a[0]), A),
    ("diagonal", lambda m, a: m.diagonal(a, 0, 0, 2), B3),
    ("trace", lambda m, a: m.trace(a), A),
    ("atleast_3d", lambda m, a: m.atleast_3d(a), A),
    ("resize", lambda m, a: m.resize(a, (5, 3)), A),
    ("delete", lambda m, a: m.delete(a, 1, axis=1), A),
    ("delete_slice", lambda m, a: m.delete(a, slice(0, 3, 2), axis=1), A),
    ("insert", lambda m, a: m.insert(a, 2, 7.0, axis=1), A),
]


@pytest.mark.parametrize("name,f,x", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(name, f, x):
    onp.testing.assert_allclose(f(np, mxa(x)).asnumpy(), f(onp, x))


@pytest.mark.parametrize("name,f,x", CASES[::3] + [CASES[20], CASES[22], CASES[33], CASES[34]],
                         ids=[c[0] for c in CASES[::3] + [CASES[20], CASES[22], CASES[33], CASES[34]]])
def test_gradients(name, f, x):
    check_grad(lambda a: f(np, a), x[..., :3] if x.ndim == 3 else x)


def test_join_and_split():
    a, b = A, A * 2
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        onp.testing.assert_allclose(getattr(np, name)([mxa(a), mxa(b)]).asnumpy(),
                                    getattr(onp, name)([a, b]))
    onp.testing.assert_allclose(np.concatenate([mxa(a), mxa(b)], axis=1).asnumpy(),
                                onp.concatenate([a, b], axis=1))
    onp.testing.assert_allclose(np.concatenate([mxa(a), mxa(b)], axis=None).asnumpy(),
                                onp.concatenate([a, b], axis=None))
    onp.testing.assert_allclose(np.stack([mxa(a), mxa(b)], axis=-1).asnumpy(),
                                onp.stack([a, b], axis=-1))
    onp.testing.assert_allclose(np.append(mxa(a), mxa(b), axis=0).asnumpy(), onp.append(a, b, 0))
    for f, args in ((np.split, (2,)), (np.split, ([1, 3],)), (np.array_split, (3,))):
        got = f(mxa(a), *args, axis=1)
        want = getattr(onp, f.__name__)(a, *args, axis=1)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            onp.testing.assert_allclose(g.asnumpy(), w)
    with pytest.raises(ValueError):
        np.split(mxa(a), 3, axis=1)
    assert [x.shape for x in np.hsplit(mxa(a), 2)] == [(3, 2), (3, 2)]
    assert [x.shape for x in np.vsplit(mxa(a), 3)] == [(1, 4)] * 3
    assert [x.shape for x in np.dsplit(mxa(B3), [1])] == [(2, 3, 1), (2, 3, 3)]
    check_grad(lambda x, y: np.concatenate([x, y], axis=0), a[:2], b[:1])
    check_grad(lambda x: np.split(x, [1, 3], axis=1), a)
    check_grad(lambda x, y: np.stack([x, y]), a[:2], b[:2])


def test_mixed_dtype_join_promotes():
    r = np.concatenate([mxa(onp.ones(2, onp.int32)), mxa(onp.ones(2, onp.float32))])
    assert r.dtype == onp.float32


def test_take_where_and_friends():
    idx = onp.array([[0, 2], [3, 1]])
    onp.testing.assert_allclose(np.take(mxa(A), mxa(idx), axis=1).asnumpy(),
                                onp.take(A, idx, axis=1))
    onp.testing.assert_allclose(np.take(mxa(A), mxa(idx)).asnumpy(), onp.take(A, idx))
    onp.testing.assert_allclose(np.take(mxa(A), mxa(idx * 3), axis=1, mode="clip").asnumpy(),
                                onp.take(A, idx * 3, axis=1, mode="clip"))
    onp.testing.assert_allclose(np.take(mxa(A), mxa(idx * 3), axis=1, mode="wrap").asnumpy(),
                                onp.take(A, idx * 3, axis=1, mode="wrap"))
    with pytest.raises(MXNetError, match="out of bounds"):     # as MXNet's kernel check
        np.take(mxa(A), mxa(onp.array([9])), axis=1)
    tidx = onp.argsort(A, axis=1)[:, :2]
    onp.testing.assert_allclose(np.take_along_axis(mxa(A), mxa(tidx), 1).asnumpy(),
                                onp.take_along_axis(A, tidx, 1))
    c = A > 5
    onp.testing.assert_allclose(np.where(mxa(c), mxa(A), mxa(-A[0])).asnumpy(),
                                onp.where(c, A, -A[0]))
    onp.testing.assert_allclose(np.where(mxa(c), mxa(A), 0.0).asnumpy(), onp.where(c, A, 0.0))
    check_grad(lambda a: np.take(a, mxa(idx), axis=1), A)
    # an index taken twice gets both gradients
    check_grad(lambda a: np.take(a, mxa(onp.array([1, 1, 0])), axis=0), A)
    check_grad(lambda x, y: np.where(mxa(c), x, y), A, A * 3)


def test_index_map_second_order():
    x = mxa(A)
    x.attach_grad()
    with ag.record():
        y = np.flip(x, 1) * x
        g = ag.grad(y.sum(), [x], create_graph=True)[0]
        z = (g * g).sum()
    z.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), 8 * A)


def test_shape_helpers():
    assert np.shape(mxa(A)) == (3, 4) and np.ndim(mxa(A)) == 2 and np.size(mxa(A)) == 12
    assert np.size(mxa(A), 1) == 4
    a, b = np.broadcast_arrays(mxa(A[:1]), mxa(A[:, :1]))
    assert a.shape == b.shape == (3, 4)
