"""Shape ops (gpunda/ops/tensor/matrix.py): forward against index-level NumPy references,
MXNet's documented examples, errors, finite-difference gradients, second order."""
import itertools
import json

import numpy as np
import pytest

import gpunda as mx
from gpunda.test_utils import numeric_grad
from gpunda import autograd
from gpunda.base import GpundaError

nd = mx.nd
_op = nd._op   # every registered name, hidden helpers included


# ---------------------------------------------------------------------------
# references built element by element from index maps, not from the NumPy
# function the op itself calls


def gather(out_shape, x, src_index):
    """out[i] = x[src_index(i)] for every index i of out_shape."""
    out = np.zeros(out_shape, dtype=x.dtype)
    for idx in np.ndindex(*out_shape):
        out[idx] = x[src_index(idx)]
    return out


def ref_transpose(x, axes):
    axes = axes or tuple(reversed(range(x.ndim)))
    shape = tuple(x.shape[a] for a in axes)

    def src(idx):
        j = [0] * x.ndim
        for k, a in enumerate(axes):
            j[a] = idx[k]
        return tuple(j)
    return gather(shape, x, src)


def ref_tile(x, reps):
    d = max(x.ndim, len(reps))
    xs = (1,) * (d - x.ndim) + x.shape
    rs = (1,) * (d - len(reps)) + tuple(reps)
    xx = x.reshape(xs)
    return gather(tuple(a * b for a, b in zip(xs, rs)), xx,
                  lambda idx: tuple(i % s for i, s in zip(idx, xs)))


def ref_repeat(x, r, axis):
    if axis is None:
        flat = x.reshape(-1)
        return gather((flat.size * r,), flat, lambda idx: (idx[0] // r,))
    shape = list(x.shape)
    shape[axis] *= r
    return gather(tuple(shape), x, lambda idx: idx[:axis] + (idx[axis] // r,) + idx[axis + 1:])


def ref_pad(x, pw, mode, cv=0.0):
    pairs = [(pw[2 * k], pw[2 * k + 1]) for k in range(x.ndim)]
    shape = tuple(n + b + e for n, (b, e) in zip(x.shape, pairs))
    out = np.empty(shape, dtype=x.dtype)
    for idx in np.ndindex(*shape):
        src, inside = [], True
        for i, n, (b, _) in zip(idx, x.shape, pairs):
            j = i - b
            if 0 <= j < n:
                src.append(j)
            elif mode == "constant":
                inside = False
                src.append(0)
            elif mode == "edge":
                src.append(0 if j < 0 else n - 1)
            else:   # reflect about the edge element (which is not repeated)
                src.append(-j if j < 0 else 2 * (n - 1) - j)
        out[idx] = x[tuple(src)] if inside else cv
    return out


def ref_depth_to_space(x, b):
    n, c, h, w = x.shape
    c2 = c // (b * b)
    out = np.empty((n, c2, h * b, w * b), x.dtype)
    for i0, ci, hi, wi in np.ndindex(*out.shape):
        bi, bj = hi % b, wi % b
        out[i0, ci, hi, wi] = x[i0, (bi * b + bj) * c2 + ci, hi // b, wi // b]
    return out


def ref_space_to_depth(x, b):
    n, c, h, w = x.shape
    out = np.empty((n, c * b * b, h // b, w // b), x.dtype)
    for i0, c0, c1, hi, wi in itertools.product(range(n), range(b * b), range(c),
                                                 range(h // b), range(w // b)):
        bi, bj = divmod(c0, b)
        out[i0, c0 * c + c1, hi, wi] = x[i0, c1, hi * b + bi, wi * b + bj]
    return out


def ref_diag(x, k=0, axis1=0, axis2=1):
    if x.ndim == 1:
        n = x.size + abs(k)
        out = np.zeros((n, n), x.dtype)
        for i, v in enumerate(x):
            out[i + max(-k, 0), i + max(k, 0)] = v
        return out
    rest = [a for a in range(x.ndim) if a not in (axis1, axis2)]
    n1, n2 = x.shape[axis1], x.shape[axis2]
    length = max(0, min(n1 - max(-k, 0), n2 - max(k, 0)))
    out = np.zeros(tuple(x.shape[a] for a in rest) + (length,), x.dtype)
    for idx in np.ndindex(*out.shape):
        j = [0] * x.ndim
        for a, v in zip(rest, idx[:-1]):
            j[a] = v
        j[axis1] = idx[-1] + max(-k, 0)
        j[axis2] = idx[-1] + max(k, 0)
        out[idx] = x[tuple(j)]
    return out


# ---------------------------------------------------------------------------
# the case table: (id, function of NDArrays, input shapes, NumPy reference)

CASES = [
    ("Reshape-codes", lambda x: nd.Reshape(x, shape=(4, 0, -1)), [(2, 3, 4)],
     lambda x: x.reshape(4, 3, 2)),
    ("reshape-reverse", lambda x: nd.reshape(x, shape=(-1, 0), reverse=True), [(2, 3, 4)],
     lambda x: x.reshape(6, 4)),
    ("reshape-split", lambda x: nd.reshape(x, shape=(-4, 1, 2, -3)), [(2, 3, 4)],
     lambda x: x.reshape(1, 2, 12)),
    ("reshape_like", lambda x, y: nd.reshape_like(x, y), [(2, 3, 4), (6, 4)],
     lambda x, y: x.reshape(6, 4)),
    ("reshape_like-range", lambda x, y: nd.reshape_like(x, y, lhs_begin=1, lhs_end=3,
                                                        rhs_begin=0, rhs_end=1),
     [(2, 3, 4), (12, 5)], lambda x, y: x.reshape(2, 12)),
    ("Flatten", lambda x: nd.Flatten(x), [(2, 3, 4)], lambda x: x.reshape(2, 12)),
    ("flatten-1d", lambda x: nd.flatten(x), [(5,)], lambda x: x.reshape(5, 1)),
    ("expand_dims", lambda x: nd.expand_dims(x, axis=-1), [(2, 3)], lambda x: x[:, :, None]),
    ("expand_dims-0", lambda x: nd.expand_dims(x, 0), [(2, 3)], lambda x: x[None]),
    ("squeeze-all", lambda x: nd.squeeze(x), [(2, 1, 3, 1)], lambda x: x.reshape(2, 3)),
    ("squeeze-axis", lambda x: nd.squeeze(x, axis=(1,)), [(2, 1, 3, 1)],
     lambda x: x.reshape(2, 3, 1)),
    ("transpose", lambda x: nd.transpose(x), [(2, 3, 4)], lambda x: ref_transpose(x, ())),
    ("transpose-axes", lambda x: nd.transpose(x, axes=(1, 2, 0)), [(2, 3, 4)],
     lambda x: ref_transpose(x, (1, 2, 0))),
    ("transpose-neg", lambda x: nd.transpose(x, axes=(-1, 0, 1)), [(2, 3, 4)],
     lambda x: ref_transpose(x, (2, 0, 1))),
    ("SwapAxis", lambda x: nd.SwapAxis(x, dim1=0, dim2=2), [(2, 3, 4)],
     lambda x: ref_transpose(x, (2, 1, 0))),
    ("swapaxes", lambda x: nd.swapaxes(x, 1, -1), [(2, 3, 4)],
     lambda x: ref_transpose(x, (0, 2, 1))),
    ("flip", lambda x: nd.flip(x, axis=(0, 2)), [(2, 3, 4)],
     lambda x: gather(x.shape, x, lambda i: (1 - i[0], i[1], 3 - i[2]))),
    ("reverse", lambda x: nd.reverse(x, axis=1), [(2, 3)],
     lambda x: gather(x.shape, x, lambda i: (i[0], 2 - i[1]))),
    ("slice", lambda x: nd.slice(x, begin=(1, 0, 1), end=(2, 3, 4), step=(1, 2, 2)),
     [(2, 3, 4)], lambda x: gather((1, 2, 2), x, lambda i: (1 + i[0], 2 * i[1], 1 + 2 * i[2]))),
    ("slice-none-neg", lambda x: nd.slice(x, begin=(None, 1), end=(None, -1), step=(-1, 1)),
     [(3, 4)], lambda x: gather((3, 2), x, lambda i: (2 - i[0], 1 + i[1]))),
    ("slice-mxdoc", lambda x: nd.slice(x, begin=(None, 0), end=(None, 3), step=(-1, 2)),
     [(3, 4)], lambda x: gather((3, 2), x, lambda i: (2 - i[0], 2 * i[1]))),
    ("crop", lambda x: nd.crop(x, begin=(0, 1), end=(2, 3)), [(3, 4)],
     lambda x: gather((2, 2), x, lambda i: (i[0], i[1] + 1))),
    ("slice_axis", lambda x: nd.slice_axis(x, axis=1, begin=-2, end=None), [(2, 3, 4)],
     lambda x: gather((2, 2, 4), x, lambda i: (i[0], i[1] + 1, i[2]))),
    ("slice_axis-pos", lambda x: nd.slice_axis(x, 0, 1, 3), [(4, 2)],
     lambda x: gather((2, 2), x, lambda i: (i[0] + 1, i[1]))),
    ("slice_like", lambda x, y: nd.slice_like(x, y, axes=(0, -1)), [(3, 4, 5), (2, 4, 3)],
     lambda x, y: gather((2, 4, 3), x, lambda i: i)),
    ("slice_like-all", lambda x, y: nd.slice_like(x, y), [(3, 4), (2, 3)],
     lambda x, y: gather((2, 3), x, lambda i: i)),
    ("Concat", lambda a, b, c: nd.Concat(a, b, c, dim=1), [(2, 3), (2, 1), (2, 2)],
     lambda a, b, c: np.column_stack([a[:, 0], a[:, 1], a[:, 2], b[:, 0], c[:, 0], c[:, 1]])),
    ("concat-0", lambda a, b: nd.concat(a, b, dim=0), [(1, 3), (2, 3)],
     lambda a, b: np.array([a[0], b[0], b[1]])),
    ("stack", lambda a, b, c: nd.stack(a, b, c, axis=-1), [(2, 3)] * 3,
     lambda a, b, c: gather((2, 3, 3), np.array([a, b, c]), lambda i: (i[2], i[0], i[1]))),
    ("stack-0", lambda a, b: nd.stack(a, b), [(2,)] * 2, lambda a, b: np.array([a, b])),
    ("tile", lambda x: nd.tile(x, reps=(2, 1, 3)), [(2, 3)], lambda x: ref_tile(x, (2, 1, 3))),
    ("tile-short", lambda x: nd.tile(x, reps=(2,)), [(2, 3)], lambda x: ref_tile(x, (2,))),
    ("repeat-flat", lambda x: nd.repeat(x, repeats=2), [(2, 3)], lambda x: ref_repeat(x, 2, None)),
    ("repeat-axis", lambda x: nd.repeat(x, repeats=3, axis=-1), [(2, 2)],
     lambda x: ref_repeat(x, 3, 1)),
    ("broadcast_to", lambda x: nd.broadcast_to(x, shape=(2, 4, 0)), [(2, 1, 3)],
     lambda x: gather((2, 4, 3), x, lambda i: (i[0], 0, i[2]))),
    ("broadcast_like", lambda x, y: nd.broadcast_like(x, y), [(1, 3), (4, 3)],
     lambda x, y: gather((4, 3), x, lambda i: (0, i[1]))),
    ("broadcast_like-axes", lambda x, y: nd.broadcast_like(x, y, lhs_axes=(0,), rhs_axes=(1,)),
     [(1, 3), (2, 5)], lambda x, y: gather((5, 3), x, lambda i: (0, i[1]))),
    ("broadcast_axis", lambda x: nd.broadcast_axis(x, axis=(1, 2), size=(3, 4)), [(2, 1, 1)],
     lambda x: gather((2, 3, 4), x, lambda i: (i[0], 0, 0))),
    ("broadcast_axes", lambda x: nd.broadcast_axes(x, axis=0, size=2), [(1, 3)],
     lambda x: gather((2, 3), x, lambda i: (0, i[1]))),
    ("diag-1d", lambda x: nd.diag(x, k=1), [(3,)], lambda x: ref_diag(x, 1)),
    ("diag-2d", lambda x: nd.diag(x, k=-1), [(3, 4)], lambda x: ref_diag(x, -1)),
    ("diag-3d", lambda x: nd.diag(x, k=1, axis1=0, axis2=2), [(3, 2, 4)],
     lambda x: ref_diag(x, 1, 0, 2)),
    ("pad-constant", lambda x: nd.pad(x, mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                      constant_value=1.5), [(1, 2, 3, 3)],
     lambda x: ref_pad(x, (0, 0, 0, 0, 1, 2, 2, 1), "constant", 1.5)),
    ("pad-edge", lambda x: nd.Pad(x, mode="edge", pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
     [(1, 2, 3, 3)], lambda x: ref_pad(x, (0, 0, 0, 0, 2, 1, 1, 3), "edge")),
    ("pad-reflect", lambda x: nd.pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 2, 1, 1, 2)),
     [(1, 2, 3, 3)], lambda x: ref_pad(x, (0, 0, 0, 0, 2, 1, 1, 2), "reflect")),
    ("pad-5d", lambda x: nd.pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 0, 1, 1, 0)),
     [(1, 1, 2, 2, 3)], lambda x: ref_pad(x, (0, 0, 0, 0, 1, 1, 0, 1, 1, 0), "reflect")),
    ("depth_to_space", lambda x: nd.depth_to_space(x, block_size=2), [(1, 8, 2, 3)],
     lambda x: ref_depth_to_space(x, 2)),
    ("space_to_depth", lambda x: nd.space_to_depth(x, 2), [(2, 2, 4, 6)],
     lambda x: ref_space_to_depth(x, 2)),
]

MULTI = [
    ("split", lambda x: nd.split(x, num_outputs=3, axis=1), [(2, 3, 2)],
     lambda x: [x[:, k:k + 1] for k in range(3)]),
    ("SliceChannel-squeeze", lambda x: nd.SliceChannel(x, num_outputs=2, axis=0, squeeze_axis=True),
     [(2, 3)], lambda x: [x[0], x[1]]),
    ("split-neg", lambda x: nd.split(x, 2, -1), [(3, 4)], lambda x: [x[:, :2], x[:, 2:]]),
]


def _inputs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forward(case, dtype):
    _, f, shapes, ref = case
    xs = _inputs(shapes, dtype)
    before = [x.copy() for x in xs]
    arrs = [nd.array(x, dtype=dtype) for x in xs]
    y = f(*arrs)
    want = ref(*xs)
    assert y.shape == want.shape
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.asnumpy(), want.astype(dtype))
    for a, b in zip(arrs, before):
        np.testing.assert_array_equal(a.asnumpy(), b)


@pytest.mark.parametrize("case", MULTI, ids=[c[0] for c in MULTI])
def test_forward_multi(case):
    _, f, shapes, ref = case
    xs = _inputs(shapes, np.float32)
    ys = f(*[nd.array(x) for x in xs])
    want = ref(*xs)
    assert len(ys) == len(want)
    for y, w in zip(ys, want):
        assert y.shape == w.shape
        np.testing.assert_array_equal(y.asnumpy(), w)


def test_integer_dtypes_kept():
    x = nd.array(np.arange(6).reshape(2, 3), dtype="int32")
    assert nd.transpose(x).dtype == np.int32
    assert nd.tile(x, reps=(2,)).dtype == np.int32
    p = nd.pad(nd.array(np.arange(4).reshape(1, 1, 2, 2), dtype="int64"), mode="constant",
               pad_width=(0, 0, 0, 0, 1, 1, 1, 1), constant_value=7)
    assert p.dtype == np.int64 and p.asnumpy()[0, 0, 0, 0] == 7


@pytest.mark.parametrize("shape,spec,expect", [
    # MXNet's documented examples for Reshape
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4, 5), (-3, -3), (6, 20)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-3, -2), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
    ((10, 5, 4), (-1, 0), (40, 5)),
    ((0, 3), (-1, 3), (0, 3)),
    ((0, 3), (0, 3), (0, 3)),
])
def test_reshape_codes(shape, spec, expect):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    y = nd.Reshape(nd.array(x), shape=spec)
    assert y.shape == expect
    np.testing.assert_array_equal(y.asnumpy(), x.reshape(expect))


def test_reshape_reverse_and_strings():
    x = nd.zeros((10, 5, 4))
    assert nd.reshape(x, shape=(-1, 0), reverse=True).shape == (50, 4)
    assert nd.reshape(x, shape="(-1, 0)", reverse="True").shape == (50, 4)
    assert x.reshape((0, -1)).shape == (10, 20)
    assert x.reshape(-3, 0).shape == (50, 4)
    # MXNet flips the raw spec: a -4 splits with the two values before it (observed 1.9.1)
    assert nd.reshape(nd.zeros((64,)), shape=(16, 4, -4), reverse=True).shape == (16, 4)
    assert nd.reshape(nd.zeros((64, 3)), shape=(2, -1, -4, 0), reverse=True).shape == (2, 32, 3)
    assert nd.reshape(nd.zeros((3, 64)), shape=(0, 8, -1, -4), reverse=True).shape == (3, 8, 8)
    with pytest.raises(GpundaError, match="-4 must be followed by two"):
        nd.reshape(x, shape=(-2, -4, 2, -1), reverse=True)


def test_reshape_legacy_target_shape():
    x = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert nd.Reshape(x, target_shape=(0, 4)).shape == (6, 4)
    assert nd.Reshape(x, target_shape=(9, 0, 3), keep_highest=True).shape == (2, 4, 3)
    # shape wins over target_shape
    assert nd.Reshape(x, shape=(4, 6), target_shape=(24,)).shape == (4, 6)


def test_outputs_do_not_alias_inputs():
    x = nd.array(np.arange(6, dtype=np.float32))
    for y in (nd.reshape(x, shape=(2, 3)), nd.expand_dims(x, axis=0), nd.slice(x, begin=(1,),
              end=(4,)), nd.transpose(x), nd.flip(x, axis=0), nd.split(x, 2, 0)[0],
              nd.squeeze(x), nd.broadcast_to(x, shape=(6,)), nd.tile(x, reps=())):
        y[:] = -1
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6))


def test_squeeze_keeps_one_dim_and_shape_arrays():
    assert nd.squeeze(nd.zeros((1, 1, 1))).shape == (1,)
    assert nd.squeeze(nd.zeros((1, 1)), axis=(0, 1)).shape == (1,)
    s = nd.shape_array(nd.array(np.zeros((2, 0, 5))))    # nd.zeros needs np_shape here
    assert s.dtype == np.int64
    np.testing.assert_array_equal(s.asnumpy(), [2, 0, 5])
    z = nd.size_array(nd.zeros((2, 3, 4)))
    assert z.dtype == np.int64 and z.shape == (1,)
    np.testing.assert_array_equal(z.asnumpy(), [24])


def test_slice_out_of_range_follows_python_slicing():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    for b, e, s in [((-10, 3), (10, 99), (1, 2)), ((5, None), (7, None), (1, -1)),
                    ((None, 4), (None, -10), (-2, -1)), ((2,), (1,), ())]:
        want = x[tuple(slice(bb, ee, (s[i] if s else None)) for i, (bb, ee) in
                       enumerate(zip(b, e)))]
        y = nd.slice(nd.array(x), begin=b, end=e, step=s)
        assert y.shape == want.shape
        np.testing.assert_array_equal(y.asnumpy(), want)


def test_slice_step_none_means_no_steps_as_in_mxnet():
    # MXNet 1.9.1: step=None is an unknown-length tuple, i.e. every step is 1
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    y = nd.slice(nd.array(x), begin=(1, None), end=(3, 4), step=None)
    np.testing.assert_array_equal(y.asnumpy(), x[1:3, :4])
    s = mx.sym.slice(mx.sym.var("a"), begin=(1,), end=(3,), step=None)
    assert s.list_attr()["step"] == "None"
    assert s.infer_shape(a=(4, 5))[1] == [(2, 5)]
    a = nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        z = nd.slice(a, begin=(1,), end=(3,), step=None)
    z.backward()
    want = np.zeros_like(x)
    want[1:3] = 1
    np.testing.assert_array_equal(a.grad.asnumpy(), want)


def test_positional_params_follow_mxnet_order():
    x = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert nd.slice_axis(x, 2, 1, 3).shape == (2, 3, 2)
    assert nd.tile(x, (1, 2)).shape == (2, 3, 8)
    assert nd.repeat(x, 2, 0).shape == (4, 3, 4)
    assert nd.diag(x, 0, 1, 2).shape == (2, 3)
    assert x.slice_axis(axis=0, begin=1, end=2).shape == (1, 3, 4)
    assert x.swapaxes(0, 1).shape == (3, 2, 4)
    assert x.expand_dims(1).shape == (2, 1, 3, 4)


# ---------------------------------------------------------------------------
# errors: GpundaError naming the op, the parameter and the value

ERRORS = [
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(4, -1)), ["Reshape", "shape=(4, -1)", "(2, 3)"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(-1, -1)), ["Reshape", "shape=(-1, -1)", "-1"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(0, 0, 0)), ["Reshape", "(0, 0, 0)", "(2, 3)"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(-3, -3)), ["Reshape", "(-3, -3)", "-3"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(-4, 4, -1, 0)), ["Reshape", "-4", "(2, 3)"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(-4, -1, -1, 3)), ["Reshape", "both be -1"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(-5, 6)), ["Reshape", "-5"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(7,)), ["Reshape", "(7,)", "(2, 3)"]),
    (lambda: nd.reshape(nd.zeros((2, 3)), shape=(-4, 2)), ["Reshape", "-4"]),
    (lambda: nd.Reshape(nd.zeros((2, 3))), ["Reshape", "shape"]),
    (lambda: nd.reshape_like(nd.zeros((2, 3)), nd.zeros((4,))), ["reshape_like", "(4,)"]),
    (lambda: nd.transpose(nd.zeros((2, 3)), axes=(0, 0)), ["transpose", "axes=(0, 0)"]),
    (lambda: nd.transpose(nd.zeros((2, 3)), axes=(0, 1, 2)), ["transpose", "axes=(0, 1, 2)"]),
    (lambda: nd.swapaxes(nd.zeros((2, 3)), 0, 2), ["SwapAxis", "dim2=2"]),
    (lambda: nd.expand_dims(nd.zeros((2, 3)), axis=4), ["expand_dims", "axis=4"]),
    (lambda: nd.squeeze(nd.zeros((2, 3)), axis=1), ["squeeze", "axis=1", "size 3"]),
    (lambda: nd.squeeze(nd.zeros((1, 3)), axis=5), ["squeeze", "axis=5"]),
    (lambda: nd.flip(nd.zeros((2, 3)), axis=2), ["reverse", "axis=2"]),
    (lambda: nd.slice(nd.zeros((2, 3)), begin=(0,), end=(1, 2)), ["slice", "begin=(0,)"]),
    (lambda: nd.slice(nd.zeros((2, 3)), begin=(0, 0, 0), end=(1, 1, 1)), ["slice", "begin"]),
    (lambda: nd.slice(nd.zeros((2, 3)), begin=(0,), end=(1,), step=(0,)), ["slice", "step"]),
    (lambda: nd.slice_axis(nd.zeros((2, 3)), axis=1, begin=2, end=1), ["slice_axis", "begin=2"]),
    (lambda: nd.slice_axis(nd.zeros((2, 3)), axis=1, begin=0, end=4), ["slice_axis", "end=4"]),
    (lambda: nd.slice_axis(nd.zeros((2, 3)), axis=3, begin=0, end=1), ["slice_axis", "axis=3"]),
    (lambda: nd.slice_like(nd.zeros((2, 3)), nd.zeros((3, 3))), ["slice_like", "(3, 3)"]),
    (lambda: nd.Concat(nd.zeros((2, 3)), nd.zeros((3, 3)), dim=1), ["Concat", "arg1", "(3, 3)"]),
    (lambda: nd.concat(nd.zeros((2, 3)), nd.zeros((2, 3)), dim=2), ["Concat", "dim=2"]),
    (lambda: nd.concat(nd.zeros((2,)), nd.zeros((2,), dtype="float64"), dim=0),
     ["Concat", "dtype"]),
    (lambda: nd.stack(nd.zeros((2, 3)), nd.zeros((2, 2))), ["stack", "arg1", "(2, 2)"]),
    (lambda: nd.stack(nd.zeros((2, 3)), nd.zeros((2, 3)), axis=4), ["stack", "axis=4"]),
    (lambda: nd.split(nd.zeros((2, 3)), num_outputs=2, axis=1),
     ["SliceChannel", "num_outputs=2", "3"]),
    (lambda: nd.split(nd.zeros((2, 4)), num_outputs=2, axis=1, squeeze_axis=True),
     ["SliceChannel", "squeeze_axis"]),
    (lambda: nd.split(nd.zeros((2, 4)), num_outputs=2, axis=2), ["SliceChannel", "axis=2"]),
    (lambda: nd.tile(nd.zeros((2, 3)), reps=(-1,)), ["tile", "reps=(-1,)"]),
    (lambda: nd.repeat(nd.zeros((2, 3)), repeats=-1), ["repeat", "repeats=-1"]),
    (lambda: nd.repeat(nd.zeros((2, 3)), repeats=2, axis=2), ["repeat", "axis=2"]),
    (lambda: nd.broadcast_to(nd.zeros((2, 3)), shape=(4, 3)), ["broadcast_to", "shape=(4, 3)"]),
    (lambda: nd.broadcast_to(nd.zeros((2, 3)), shape=(2, 2, 3)), ["broadcast_to", "(2, 2, 3)"]),
    (lambda: nd.broadcast_like(nd.zeros((2, 3)), nd.zeros((4, 3))), ["broadcast_like", "(4, 3)"]),
    (lambda: nd.broadcast_like(nd.zeros((1, 3)), nd.zeros((4, 3)), lhs_axes=(0,)),
     ["broadcast_like", "rhs_axes=None"]),
    (lambda: nd.broadcast_axis(nd.zeros((2, 3)), axis=0, size=4), ["broadcast_axis", "axis=(0,)"]),
    (lambda: nd.broadcast_axis(nd.zeros((1, 3)), axis=(0, 1), size=(4,)),
     ["broadcast_axis", "size=(4,)"]),
    (lambda: nd.diag(nd.zeros((2, 3)), axis1=1, axis2=1), ["diag", "axis1=1"]),
    (lambda: nd.pad(nd.zeros((2, 3)), mode="constant", pad_width=(1, 1, 1, 1)),
     ["Pad", "(2, 3)"]),
    (lambda: nd.pad(nd.zeros((1, 1, 2, 2)), mode="constant", pad_width=(0, 0, 0, 0, 1, 1)),
     ["Pad", "pad_width=(0, 0, 0, 0, 1, 1)"]),
    (lambda: nd.pad(nd.zeros((1, 1, 2, 2)), mode="edge", pad_width=(1, 0, 0, 0, 1, 1, 1, 1)),
     ["Pad", "pad_width=(1, 0, 0, 0, 1, 1, 1, 1)"]),
    (lambda: nd.pad(nd.zeros((1, 1, 2, 2)), mode="reflect", pad_width=(0, 0, 0, 0, 2, 0, 0, 0)),
     ["Pad", "reflect", "pad_width"]),
    (lambda: nd.pad(nd.zeros((1, 1, 2, 2)), mode="wrap", pad_width=(0,) * 8),
     ["Pad", "mode", "wrap"]),
    (lambda: nd.depth_to_space(nd.zeros((1, 6, 2, 2)), block_size=2),
     ["depth_to_space", "block_size=2", "6"]),
    (lambda: nd.space_to_depth(nd.zeros((1, 1, 3, 4)), block_size=2),
     ["space_to_depth", "block_size=2"]),
    (lambda: nd.space_to_depth(nd.zeros((1, 3, 4)), block_size=2), ["space_to_depth", "4-D"]),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors(k):
    f, words = ERRORS[k]
    with pytest.raises(GpundaError) as ei:
        f()
    msg = str(ei.value)
    for w in words:
        assert w in msg, (w, msg)


def test_failed_call_leaves_inputs_alone():
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(GpundaError):
        nd.reshape(x, shape=(4, 2))
    with pytest.raises(GpundaError):
        nd.concat(x, nd.zeros((3, 3)), dim=1)
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6).reshape(2, 3))


# ---------------------------------------------------------------------------
# gradients: central differences in float64


def fd_grads(f, xs, heads, eps=1e-6):
    """Numerical d/dx_k of sum_j <head_j, f(x)_j> for every input x_k."""
    return numeric_grad(f, xs, eps=2 * eps, dtype=np.float64, head_grads=heads)


def analytic_grads(f, xs, heads, create_graph=False):
    arrs = [nd.array(x, dtype=np.float64) for x in xs]
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        ys = f(*arrs)
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    hs = [nd.array(h, dtype=np.float64) for h in heads]
    if create_graph:
        gs = autograd.grad(ys, arrs, head_grads=hs, create_graph=True)
        return [g.asnumpy() for g in gs]
    autograd.backward(ys, hs)
    return [a.grad.asnumpy() for a in arrs]


def _heads(f, xs, seed=1):
    ys = f(*[nd.array(x, dtype=np.float64) for x in xs])
    ys = ys if isinstance(ys, (list, tuple)) else [ys]
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(y.shape) for y in ys]


# ops whose second input only supplies a shape: MXNet gives it a zero gradient
_SHAPE_ONLY_RHS = {"reshape_like", "reshape_like-range", "slice_like", "slice_like-all",
                   "broadcast_like", "broadcast_like-axes"}

def _tile_np_shape(x, reps):
    with mx.np_shape():     # zero reps are zero-size only under NumPy shape semantics
        return nd.tile(x, reps=reps)


GRAD_CASES = [c for c in CASES] + MULTI + [
    ("hidden-slice_scatter", lambda g: _op._slice_scatter(g, shape=(3, 4), begin=(None, 1),
                                                           end=(None, 4), step=(-1, 2)),
     [(3, 2)], None),
    ("hidden-diag_scatter", lambda g: _op._diag_scatter(g, shape=(2, 3, 4), k=-1, axis1=1,
                                                         axis2=-1), [(2, 2)], None),
    ("hidden-pad_adjoint", lambda g: _op._pad_adjoint(g, mode="reflect",
                                                       pad_width=(0, 0, 0, 0, 1, 2, 2, 1)),
     [(1, 1, 6, 6)], None),
    ("hidden-reshape_exact", lambda g: _op._reshape_exact(g, shape=(3, 2)), [(2, 3)], None),
    ("repeat-zero", lambda x: nd.repeat(x, repeats=0, axis=0), [(2, 3)], None),
    ("tile-zero", lambda x: _tile_np_shape(x, (0, 2)), [(2, 3)], None),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(case):
    name, f, shapes, _ = case
    xs = _inputs(shapes, np.float64, seed=3)
    heads = _heads(f, xs)
    want = fd_grads(f, xs, heads)
    if name in _SHAPE_ONLY_RHS:
        want[1] = np.zeros_like(xs[1])
    got = analytic_grads(f, xs, heads)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)
    # the recorded (create_graph) path runs the same rules through nd ops
    got2 = analytic_grads(f, xs, heads, create_graph=True)
    for g, w in zip(got2, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)


def _second_order(f, xs, w, v, n_diff):
    """d/dx <v, grad_x <w, f(x)**2>> by autograd, differentiating through the rules.

    Only the first ``n_diff`` inputs have a gradient connected to the graph.
    """
    arrs = [nd.array(x, dtype=np.float64) for x in xs]
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        ys = f(*arrs)
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        sq = [y * y for y in ys]
        gs = autograd.grad(sq, arrs, head_grads=[nd.array(h, dtype=np.float64) for h in w],
                           create_graph=True)
    autograd.backward(gs[:n_diff], [nd.array(h, dtype=np.float64) for h in v[:n_diff]])
    return [a.grad.asnumpy() for a in arrs]


def _first_order_dot(f, xs, w, v):
    def g(*arrays):
        raw = [a.asnumpy() for a in arrays]
        arrs = [nd.array(a, dtype=np.float64) for a in raw]
        for a in arrs:
            a.attach_grad()
        with autograd.record():
            ys = f(*arrs)
            ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
            sq = [y * y for y in ys]
        autograd.backward(sq, [nd.array(h, dtype=np.float64) for h in w])
        return [a.grad for a in arrs]
    return g


SECOND = [c for c in GRAD_CASES if c[0] in {
    "Reshape-codes", "transpose-axes", "slice-none-neg", "slice_axis", "Concat", "stack",
    "split", "tile", "repeat-axis", "broadcast_to", "diag-3d", "diag-1d", "pad-reflect",
    "pad-edge", "depth_to_space", "hidden-pad_adjoint", "hidden-slice_scatter", "slice_like",
    "flip", "squeeze-axis"}]


@pytest.mark.parametrize("case", SECOND, ids=[c[0] for c in SECOND])
def test_second_order_through_gradient_rules(case):
    name, f, shapes, _ = case
    xs = _inputs(shapes, np.float64, seed=5)
    w = _heads(f, xs, seed=6)
    rng = np.random.default_rng(7)
    v = [rng.standard_normal(x.shape) for x in xs]
    n_diff = 1 if name in _SHAPE_ONLY_RHS else len(xs)
    got = _second_order(f, xs, w, v, n_diff)
    first = _first_order_dot(f, xs, w, v)
    want = fd_grads(first, xs, v[:n_diff] + [np.zeros_like(x) for x in xs[n_diff:]])
    for g, wv in zip(got, want):
        np.testing.assert_allclose(g, wv, rtol=1e-5, atol=1e-7)


def test_second_order_reshape_cube():
    """grad of sum(Reshape(x)**3) is 3x**2 (recorded), whose gradient is 6x."""
    rng = np.random.default_rng(11)
    x0 = rng.standard_normal((2, 3, 2))
    x = nd.array(x0, dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        y = nd.transpose(nd.Reshape(x, shape=(-1, 0)), axes=(1, 0)) ** 3
        g = autograd.grad(y, [x], head_grads=nd.ones(y.shape, dtype=np.float64),
                          create_graph=True)[0]
    np.testing.assert_allclose(g.asnumpy(), 3 * x0 ** 2, rtol=1e-12)
    head = rng.standard_normal(x0.shape)
    g.backward(nd.array(head, dtype=np.float64))
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x0 * head, rtol=1e-12)


def test_split_gradient_with_unused_outputs():
    x = nd.array(np.arange(6, dtype=np.float64).reshape(2, 3))
    x.attach_grad()
    with autograd.record():
        parts = nd.split(x, num_outputs=3, axis=1)
        y = parts[1] * parts[1]
    # the rule keeps no outputs, so writing into an unused part does not block backward
    parts[0][:] = 5
    g = autograd.grad(y, [x], create_graph=True, retain_graph=True)[0]
    np.testing.assert_array_equal(g.asnumpy(), [[0, 2, 0], [0, 8, 0]])
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0, 2, 0], [0, 8, 0]])


def test_all_ops_have_rules_or_are_nondiff():
    from gpunda.ops.registry import all_ops
    names = ["Reshape", "_reshape_exact", "reshape_like", "Flatten", "expand_dims", "squeeze",
             "transpose", "SwapAxis", "reverse", "slice", "_slice_scatter", "slice_axis",
             "slice_like", "Concat", "stack", "SliceChannel", "tile", "repeat", "broadcast_to",
             "broadcast_like", "broadcast_axis", "diag", "_diag_scatter", "Pad", "_pad_adjoint",
             "depth_to_space", "space_to_depth", "shape_array", "size_array"]
    ops = all_ops()
    for n in names:
        op = ops[n]
        assert op.nondiff or op.gradient is not None, n
    assert ops["shape_array"].nondiff and ops["size_array"].nondiff


@pytest.mark.gpu
@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gpu_matches_cpu(case):
    """Same values and gradients on the GPU (CuPy) as on the CPU (NumPy)."""
    _, f, shapes, _ = case
    xs = _inputs(shapes, np.float64, seed=9)
    heads = _heads(f, xs)
    results = []
    for ctx in (mx.cpu(0), mx.gpu(0)):
        arrs = [nd.array(x, ctx=ctx, dtype=np.float64) for x in xs]
        for a in arrs:
            a.attach_grad()
        with autograd.record():
            ys = f(*arrs)
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        autograd.backward(ys, [nd.array(h, ctx=ctx, dtype=np.float64) for h in heads])
        results.append([y.asnumpy() for y in ys] + [a.grad.asnumpy() for a in arrs])
    for c, g in zip(*results):
        np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-12)


def test_slice_assign_and_crop_assign_match_numpy():
    base = np.arange(12.0).reshape(3, 4)
    rhs = -np.ones((2, 2))
    want = base.copy()
    want[0:2, 1:3] = rhs
    for name in ("_slice_assign", "_crop_assign"):
        got = getattr(mx.nd._internal, name)(mx.nd.array(base), mx.nd.array(rhs),
                                             begin=(0, 1), end=(2, 3))
        np.testing.assert_array_equal(got.asnumpy(), want)
    want = base.copy()
    want[1:3, ::2] = 5
    got = mx.nd._internal._slice_assign_scalar(mx.nd.array(base), scalar=5, begin=(1, None),
                                               end=(3, None), step=(1, 2))
    np.testing.assert_array_equal(got.asnumpy(), want)
    with pytest.raises(GpundaError, match="slice shape"):
        mx.nd._internal._slice_assign(mx.nd.array(base), mx.nd.ones((3, 3)), begin=(0, 0),
                                      end=(2, 2))


def test_slice_assign_methods_write_in_place():
    # MXNet 1.9.1: NDArray.slice_assign / slice_assign_scalar update the array itself
    y = mx.nd.zeros((3, 4))
    r = y.slice_assign(mx.nd.ones((1, 2)), (0, 0), (1, 2), (None, None))
    assert r is y
    y.slice_assign_scalar(3, (2, 1), (3, 4), (None, 2))
    np.testing.assert_array_equal(y.asnumpy(), [[1, 1, 0, 0], [0, 0, 0, 0], [0, 3, 0, 3]])


def test_slice_assign_gradients():
    lhs, rhs = mx.nd.ones((3, 4)), mx.nd.ones((2, 2))
    lhs.attach_grad()
    rhs.attach_grad()
    w = mx.nd.array(np.arange(12.0).reshape(3, 4))
    with autograd.record():
        y = mx.nd._internal._slice_assign(lhs, rhs, begin=(0, 1), end=(2, 3)) * w
    y.backward()
    want = np.arange(12.0).reshape(3, 4)
    want_lhs = want.copy()
    want_lhs[0:2, 1:3] = 0
    np.testing.assert_array_equal(lhs.grad.asnumpy(), want_lhs)
    np.testing.assert_array_equal(rhs.grad.asnumpy(), want[0:2, 1:3])


def test_broadcast_like_refuses_empty_axes():
    lhs, rhs = mx.nd.ones((1, 2, 1, 3)), mx.nd.ones((5, 6, 7, 8))
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0, 2), rhs_axes=(1, 3)).shape == (6, 2, 8, 3)
    with pytest.raises(GpundaError, match="empty axes"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())


@pytest.mark.parametrize("fn", [nd.depth_to_space, nd.space_to_depth])
@pytest.mark.parametrize("shape", [(0, 4, 2, 2), (1, 4, 0, 2), (1, 0, 2, 2)])
def test_depth_space_reject_zero_dims(fn, shape):
    with pytest.raises(GpundaError, match="zero dimension"):
        fn(nd.array(np.zeros(shape)), 2)


@pytest.mark.parametrize("spec,axis,squeeze", [((1, 3), 1, False), (2, 0, False), (4, 0, True),
                                               ((2,), -1, False)])
def test_sym_split_v2_matches_numpy_split(spec, axis, squeeze):
    x = np.random.RandomState(0).rand(4, 5)
    s = mx.sym.split_v2(mx.sym.var("d"), spec, axis=axis, squeeze_axis=squeeze)
    e = s.bind(mx.cpu(), {"d": nd.array(x, dtype="float64")})
    e.forward()
    ref = np.split(x, spec if isinstance(spec, int) else list(spec), axis=axis)
    if squeeze:
        ref = [r.squeeze(axis) for r in ref]
    assert len(e.outputs) == len(ref)
    for o, r in zip(e.outputs, ref):
        np.testing.assert_array_equal(o.asnumpy(), r)


def test_sym_split_v2_rejects_uneven_sections():
    with pytest.raises(GpundaError, match="sections"):
        s = mx.sym.split_v2(mx.sym.var("d"), 3, axis=1)
        e = s.bind(mx.cpu(), {"d": nd.zeros((2, 4))})
        e.forward()


def test_tile_zero_reps_need_np_shape():
    x = mx.nd.ones((4, 4))
    with pytest.raises(GpundaError, match="holds 0"):      # MXNet 1.9.1 refuses it too
        mx.nd.tile(x, (1, 0, 3))
    with mx.np_shape():
        assert mx.nd.tile(x, (1, 0, 3)).shape == (1, 0, 12)


def test_diag_offset_outside_the_matrix_raises():
    # MXNet 1.9.1 on a (3, 4) matrix: k=4 and k=-3 give empty diagonals, k=5, -4 raise
    x = mx.nd.ones((3, 4))
    assert mx.nd.diag(x, k=4).shape == (0,) and mx.nd.diag(x, k=-3).shape == (0,)
    for k in (5, -4):
        with pytest.raises(GpundaError, match=f"k={k}"):
            mx.nd.diag(x, k=k)


# MXNet 1.9.1's export of gluon.rnn.LSTM(2, input_size=3), hybridized: its weights joined by
# _rnn_param_concat before the fused RNN op
_LSTM_EXPORT = (
    '{"nodes":[{"op":"null","name":"data0","inputs":[]},{"op":"null","name":"lstm0_l0_i2h'
    '_weight","attrs":{"__dtype__":"0","__lr_mult__":"1.0","__shape__":"(8, 3)","__storag'
    'e_type__":"0","__wd_mult__":"1.0"},"inputs":[]},{"op":"Reshape","name":"lstm0_reshap'
    'e0","attrs":{"shape":"-1"},"inputs":[[1,0,0]]},{"op":"null","name":"lstm0_l0_h2h_wei'
    'ght","attrs":{"__dtype__":"0","__lr_mult__":"1.0","__shape__":"(8, 2)","__storage_ty'
    'pe__":"0","__wd_mult__":"1.0"},"inputs":[]},{"op":"Reshape","name":"lstm0_reshape1",'
    '"attrs":{"shape":"-1"},"inputs":[[3,0,0]]},{"op":"null","name":"lstm0_l0_i2h_bias","'
    'attrs":{"__dtype__":"0","__init__":"zeros","__lr_mult__":"1.0","__shape__":"(8,)","_'
    '_storage_type__":"0","__wd_mult__":"1.0"},"inputs":[]},{"op":"Reshape","name":"lstm0'
    '_reshape2","attrs":{"shape":"-1"},"inputs":[[5,0,0]]},{"op":"null","name":"lstm0_l0_'
    'h2h_bias","attrs":{"__dtype__":"0","__init__":"zeros","__lr_mult__":"1.0","__shape__'
    '":"(8,)","__storage_type__":"0","__wd_mult__":"1.0"},"inputs":[]},{"op":"Reshape","n'
    'ame":"lstm0_reshape3","attrs":{"shape":"-1"},"inputs":[[7,0,0]]},{"op":"_rnn_param_c'
    'oncat","name":"lstm0__rnn_param_concat0","attrs":{"dim":"0","num_args":"4"},"inputs"'
    ':[[2,0,0],[4,0,0],[6,0,0],[8,0,0]]},{"op":"null","name":"data1","inputs":[]},{"op":"'
    'null","name":"data2","inputs":[]},{"op":"RNN","name":"lstm0_rnn0","attrs":{"bidirect'
    'ional":"False","lstm_state_clip_max":"None","lstm_state_clip_min":"None","lstm_state'
    '_clip_nan":"False","mode":"lstm","num_layers":"1","p":"0","projection_size":"None","'
    'state_outputs":"True","state_size":"2","use_sequence_length":"False"},"inputs":[[0,0'
    ',0],[9,0,0],[10,0,0],[11,0,0]]}],"arg_nodes":[0,1,3,5,7,10,11],"node_row_ptr":[0,1,2'
    ',3,4,5,6,7,8,9,10,11,12,15],"heads":[[12,0,0]],"attrs":{"mxnet_version":["int",10901'
    ']}}'
)


def test_rnn_param_concat_loads_from_an_mxnet_export():
    import warnings
    s = mx.sym.load_json(_LSTM_EXPORT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = mx.gluon.SymbolBlock(s, [mx.sym.var("data0"), mx.sym.var("data1"),
                                      mx.sym.var("data2")])
    sb.initialize(mx.init.Constant(0.1))
    out = sb(mx.nd.ones((2, 1, 3)), mx.nd.zeros((1, 1, 2)), mx.nd.zeros((1, 1, 2)))
    out = out if isinstance(out, (list, tuple)) else [out]
    # MXNet 1.9.1's answer
    np.testing.assert_allclose(out[0].asnumpy().ravel(), [0.17427, 0.17427, 0.286345, 0.286345],
                               rtol=1e-5)
    node = [n for n in json.loads(s.tojson())["nodes"] if n["name"] == "lstm0__rnn_param_concat0"]
    assert node[0]["op"] == "_rnn_param_concat"


def test_rnn_param_concat_joins_and_infers_like_concat():
    a, b = mx.nd.array([1, 2]), mx.nd.array([3])
    assert mx.nd._internal._rnn_param_concat(a, b, dim=0, num_args=2).asnumpy().tolist() == [1, 2, 3]
    s = mx.sym._internal._rnn_param_concat(mx.sym.var("a"), mx.sym.var("b"), dim=0, num_args=2)
    # unknown input sizes follow from the output's (the RNN op's parameter size), shared
    # equally when several are unknown; MXNet 1.9.1's answers
    s = s + mx.sym.var("c")
    assert s.infer_shape(a=(2,), b=(0,), c=(5,))[0] == [(2,), (3,), (5,)]
    assert s.infer_shape(a=(0,), b=(0,), c=(6,))[0] == [(3,), (3,), (6,)]
    assert s.infer_shape(a=(0,), b=(4,), c=(6,))[0] == [(2,), (4,), (6,)]
