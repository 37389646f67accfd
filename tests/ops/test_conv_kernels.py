"""The CPU fast paths of convolution, BatchNorm and max pooling, each against an
independent reference: naive loops for convolution, the differentiable composite rule
(create_graph=True) for BatchNorm, and the exact first-argmax routing for pooling.

The paths under test are chosen by geometry (flat rows for "same" stride-1
convolutions, the padded-row grid for other stride-1 ones), by size (cache-sized
chunks) and by the values (non-finite data leaves the grid for the im2col route), so
the tests force each one.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda.ops.kernels import conv_flat as _conv_flat
from gpunda.ops.kernels import conv_grid as _conv_grid
from gpunda.ops.kernels import conv as _conv_kernels
from gpunda.ops.kernels import conv_shifted as _conv_shifted

from test_conv import ref_conv

nd = mx.nd


def ref_conv_grads(x, w, gy, stride, pad, dilate, groups):
    """(dx, dW) of a convolution by naive loops over every output position."""
    N, C = x.shape[:2]
    Fn = w.shape[0]
    k = w.shape[2:]
    nsp = len(k)
    xp_ = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    dxp = np.zeros_like(xp_)
    dw = np.zeros_like(w)
    cg, fg = C // groups, Fn // groups
    for n in range(N):
        for f in range(Fn):
            g = f // fg
            for o in np.ndindex(*gy.shape[2:]):
                for c in range(cg):
                    for kk in np.ndindex(*k):
                        pos = tuple(o[i] * stride[i] + kk[i] * dilate[i] for i in range(nsp))
                        dw[(f, c) + kk] += gy[(n, f) + o] * xp_[(n, g * cg + c) + pos]
                        dxp[(n, g * cg + c) + pos] += gy[(n, f) + o] * w[(f, c) + kk]
    crop = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:]))
    return dxp[crop], dw


GEOMETRIES = [   # (spatial, kernel, stride, pad, dilate, groups)
    ((6, 5), (3, 3), (1, 1), (1, 1), (1, 1), 1),     # flat rows ("same" output)
    ((7, 6), (3, 3), (1, 1), (2, 1), (2, 1), 2),     # flat rows, dilation and groups
    ((5, 7), (3, 2), (1, 1), (1, 1), (1, 2), 1),     # flat rows, no unshifted column
    ((6, 6), (5, 5), (1, 1), (2, 2), (1, 1), 1),     # flat rows, two-cell shifts
    ((4, 3), (3, 5), (1, 1), (1, 4), (1, 2), 1),     # flat rows, shifts past the row width
    ((6, 6), (3, 3), (1, 1), (0, 0), (1, 1), 1),     # the row grid
    ((7, 6), (3, 2), (1, 1), (0, 1), (2, 1), 2),     # the grid with dilation and groups
    ((6, 6), (3, 3), (2, 2), (1, 1), (1, 1), 1),     # strided: im2col chunks, col2im
    ((7, 8), (3, 4), (2, 3), (1, 2), (1, 1), 2),     # strided, uneven, groups
    ((7, 7), (3, 3), (2, 2), (1, 1), (2, 1), 1),     # strided and dilated
    ((5, 5), (1, 1), (2, 2), (0, 0), (1, 1), 1),     # 1x1 projection
    ((9,), (3,), (1,), (1,), (1,), 1),               # 1-D
]


@pytest.fixture(params=[1 << 30, 256], ids=["one-chunk", "many-chunks"])
def chunk_bytes(request, monkeypatch):
    monkeypatch.setattr(_conv_kernels, "_CHUNK_BYTES", request.param)
    if request.param < 1 << 20:      # no whole-batch chunk for these small arrays either
        monkeypatch.setattr(_conv_grid, "WHOLE_BATCH_BYTES", 0)
        monkeypatch.setattr(_conv_grid, "MIN_GEMM_COLUMNS", 1)     # nor a wide-GEMM chunk
        monkeypatch.setattr(_conv_flat, "_PLACE_BYTES", 0)     # and one chunk placed at a time
        monkeypatch.setattr(_conv_shifted, "_FILL_BYTES", 0)    # or shifted
    return request.param


@pytest.mark.parametrize("sp,kernel,stride,pad,dilate,groups", GEOMETRIES)
def test_convolution_paths_match_naive_loops(rng, chunk_bytes, sp, kernel, stride, pad,
                                             dilate, groups):
    C, Fn, N = 2 * groups, 3 * groups, 3
    x = rng.standard_normal((N, C) + sp)
    w = rng.standard_normal((Fn, C // groups) + kernel)
    geo = dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_group=groups)
    xa, wa = nd.array(x, dtype="float64"), nd.array(w, dtype="float64")
    xa.attach_grad()
    wa.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(xa, wa, no_bias=True, num_filter=Fn, **geo)
    np.testing.assert_allclose(y.asnumpy(), ref_conv(x, w, None, stride, pad, dilate, groups),
                               rtol=1e-10, atol=1e-10)
    gy = rng.standard_normal(y.shape)
    y.backward(nd.array(gy, dtype="float64"))       # plain backward: the fused paths
    dx, dw = ref_conv_grads(x, w, gy, stride, pad, dilate, groups)
    np.testing.assert_allclose(xa.grad.asnumpy(), dx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wa.grad.asnumpy(), dw, rtol=1e-10, atol=1e-10)


FLAT = [g for g in GEOMETRIES if g[2] == (1, 1) and all(
    d * (k - 1) == 2 * p for k, p, d in zip(g[1], g[3], g[4]))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("sp,kernel,stride,pad,dilate,groups", FLAT)
def test_shifted_row_forward_matches_naive_loops(rng, monkeypatch, chunk_bytes, dtype, sp,
                                                 kernel, stride, pad, dilate, groups):
    # every "same" geometry, small, with the size thresholds lifted (NOTE [Shifted-row GEMMs])
    monkeypatch.setattr(_conv_shifted, "_MIN_CELLS", 0)
    monkeypatch.setattr(_conv_shifted, "_MIN_ROWS", 0)
    C, Fn, N = 2 * groups, 3 * groups, 3
    x = rng.standard_normal((N, C) + sp).astype(dtype)
    w = rng.standard_normal((Fn, C // groups) + kernel).astype(dtype)
    y = _conv_kernels.conv_forward(np, x, w, kernel, stride, dilate, pad, groups, "t")
    tol = 1e-10 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(y, ref_conv(x.astype(np.float64), w.astype(np.float64), None,
                                           stride, pad, dilate, groups), rtol=tol, atol=tol)
    assert y.dtype == np.dtype(dtype)
    # the buffers are kept for the next call of that shape: nothing of this call's data
    # may reach the next one's output, and the data passed in stays as it was
    x2 = (100 * rng.standard_normal(x.shape)).astype(dtype)
    x2_before = x2.copy()
    y2 = _conv_kernels.conv_forward(np, x2, w, kernel, stride, dilate, pad, groups, "t")
    np.testing.assert_array_equal(x2, x2_before)
    np.testing.assert_allclose(y2, ref_conv(x2.astype(np.float64), w.astype(np.float64), None,
                                            stride, pad, dilate, groups),
                               rtol=tol, atol=100 * tol)


@pytest.mark.parametrize("sp,kernel,stride,pad,dilate,groups", FLAT)
def test_shifted_row_fused_backward_matches_naive_loops(rng, monkeypatch, chunk_bytes, sp,
                                                        kernel, stride, pad, dilate, groups):
    monkeypatch.setattr(_conv_shifted, "_MIN_CELLS", 0)
    monkeypatch.setattr(_conv_shifted, "_MIN_ROWS", 0)
    C, Fn, N = 2 * groups, 3 * groups, 3
    x = rng.standard_normal((N, C) + sp)
    w = rng.standard_normal((Fn, C // groups) + kernel)
    gy = rng.standard_normal((N, Fn) + sp)
    dx, dw = _conv_kernels.conv_backward(np, gy, x, w, kernel, stride, dilate, pad, groups)
    rdx, rdw = ref_conv_grads(x, w, gy, stride, pad, dilate, groups)
    np.testing.assert_allclose(dx, rdx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw, rdw, rtol=1e-10, atol=1e-10)


def test_large_maps_take_the_shifted_rows(rng, monkeypatch):
    taken = []
    for mod, fn in ((_conv_shifted, "forward"), (_conv_shifted, "backward"),
                    (_conv_flat, "forward"), (_conv_flat, "backward")):
        real = getattr(mod, fn)

        def spy(*a, _real=real, _tag=f"{mod.__name__.rsplit('_', 1)[1]}.{fn}", **k):
            taken.append(_tag)
            return _real(*a, **k)
        monkeypatch.setattr(mod, fn, spy)
    # the forward's rows are the data's channels times KW, the backward's the gradient's
    for C, sp, want in ((16, (16, 16), ["shifted.forward", "shifted.backward"]),
                        (16, (8, 8), ["flat.forward", "flat.backward"]),
                        (8, (16, 16), ["flat.forward", "shifted.backward"])):
        x = nd.array(rng.standard_normal((2, C) + sp), ctx=mx.cpu())
        w = nd.array(rng.standard_normal((16, C, 3, 3)), ctx=mx.cpu())
        x.attach_grad()
        w.attach_grad()
        with mx.autograd.record():
            y = nd.Convolution(x, w, no_bias=True, num_filter=16, kernel=(3, 3), pad=(1, 1))
        y.backward()
        assert taken == want, (C, sp, taken)
        np.testing.assert_allclose(y.asnumpy(), ref_conv(x.asnumpy(), w.asnumpy(), None, (1, 1),
                                                         (1, 1), (1, 1), 1), rtol=1e-4, atol=1e-4)
        taken.clear()


def test_weight_gradient_keeps_inf_where_the_naive_sum_has_it(rng, chunk_bytes):
    # on the row grid a wrapped cell holding inf times a dropped column's zero would be
    # NaN, so data that is not finite leaves the grid; flat rows have no wrapped cells
    x = rng.standard_normal((2, 2, 5, 5))
    x[1, 0, 2, 4] = np.inf
    w = rng.standard_normal((3, 2, 3, 3))
    gy = np.abs(rng.standard_normal((2, 3, 5, 5))) + 0.5
    geo = ((3, 3), (1, 1), (1, 1), (1, 1))
    dw = _conv_kernels.weight_grad(np, gy, x, *geo, 1, "Convolution")
    assert _conv_grid.weight_grad(gy, x, (3, 3), (1, 1), (1, 1), 1, (5, 5), chunk_bytes) is None
    with np.errstate(invalid="ignore"):
        ref = ref_conv_grads(x, w, gy, (1, 1), (1, 1), (1, 1), 1)[1]
    np.testing.assert_array_equal(np.isnan(dw), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(dw), np.isinf(ref))


def test_row_grid_fused_backward_declines_a_gradient_that_is_not_finite(rng):
    x = rng.standard_normal((2, 2, 6, 6))
    w = rng.standard_normal((1, 2, 3, 3))
    gy = rng.standard_normal((2, 1, 4, 4))
    assert _conv_kernels.conv_backward(np, gy, x, w, (3, 3), (1, 1), (1, 1), (0, 0), 1) is not None
    gy[0, 0, 0, 0] = np.nan
    assert _conv_kernels.conv_backward(np, gy, x, w, (3, 3), (1, 1), (1, 1), (0, 0), 1) is None


def test_valid_convolution_takes_the_fused_row_grid_backward(rng, monkeypatch):
    # a "valid" convolution's data gradient is the "full" one of the output gradient:
    # the row grid's fused backward covers it where its columns are few enough
    taken = []
    real = _conv_grid.backward

    def spy(*a, **k):
        taken.append("grid.backward")
        return real(*a, **k)
    monkeypatch.setattr(_conv_grid, "backward", spy)
    x = rng.standard_normal((2, 4, 6, 7))
    w = rng.standard_normal((2, 4, 3, 3))
    xa = nd.array(x, dtype="float64", ctx=mx.cpu())      # the NumPy kernels
    wa = nd.array(w, dtype="float64", ctx=mx.cpu())
    xa.attach_grad()
    wa.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(xa, wa, no_bias=True, num_filter=2, kernel=(3, 3))
    gy = rng.standard_normal(y.shape)
    y.backward(nd.array(gy, dtype="float64", ctx=mx.cpu()))
    assert taken == ["grid.backward"]
    rdx, rdw = ref_conv_grads(x, w, gy, (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(xa.grad.asnumpy(), rdx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wa.grad.asnumpy(), rdw, rtol=1e-10, atol=1e-10)
    # alone (where the fused backward declines), the data gradient is the "full"
    # convolution of the output gradient
    dx = _conv_kernels.data_grad(np, gy, w, (3, 3), (1, 1), (1, 1), (0, 0), 1, x.shape)
    np.testing.assert_allclose(dx, rdx, rtol=1e-10, atol=1e-10)


def _assert_same_non_finite(got, ref):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    ok = np.isfinite(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("where", ["data", "gradient"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_values_leave_the_fused_backward_and_keep_the_naive_sums(
        rng, chunk_bytes, bad, where):
    # the fused dW' multiplies the data by the gradient columns' padding zeros, the naive
    # sum the gradient by the data's padding: 0 * inf differs
    x = rng.standard_normal((2, 2, 5, 4))
    w = rng.standard_normal((3, 2, 3, 3))
    gy = rng.standard_normal((2, 3, 5, 4))
    if where == "data":
        x[0, 1, 4, 0] = bad
    else:
        gy[1, 2, 0, 3] = bad        # a corner cell: its taps wrap in every direction
    assert _conv_kernels.conv_backward(np, gy, x, w, (3, 3), (1, 1), (1, 1), (1, 1), 1) is None
    xa, wa = nd.array(x, dtype="float64"), nd.array(w, dtype="float64")
    xa.attach_grad()
    wa.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(xa, wa, no_bias=True, num_filter=3, kernel=(3, 3), pad=(1, 1))
    y.backward(nd.array(gy, dtype="float64"))
    with np.errstate(invalid="ignore"):
        rdx, rdw = ref_conv_grads(x, w, gy, (1, 1), (1, 1), (1, 1), 1)
    _assert_same_non_finite(xa.grad.asnumpy(), rdx)
    _assert_same_non_finite(wa.grad.asnumpy(), rdw)


@pytest.mark.parametrize("shape,axis", [((4, 3, 5, 6), 1), ((6, 4), 1), ((3, 5, 4), -1),
                                        ((2, 3, 4, 5), 2)])
@pytest.mark.parametrize("fix_gamma", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_batchnorm_fused_kernels_match_the_composite_rule(rng, shape, axis, fix_gamma, dtype):
    # MXNet's BatchNorm takes float32 parameters for float16 data (its BatchNormType)
    pdt = "float32" if dtype == "float16" else dtype
    x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
    C = shape[axis]
    gamma = rng.standard_normal(C).astype(pdt)
    beta = rng.standard_normal(C).astype(pdt)
    head = rng.standard_normal(shape).astype(dtype)

    def run(create_graph):
        xs = [nd.array(v, dtype=v.dtype) for v in (x, gamma, beta)]
        for v in xs:
            v.attach_grad()
        mm, mv = nd.zeros(C, dtype=pdt), nd.ones(C, dtype=pdt)
        with mx.autograd.record():
            y = nd.BatchNorm(*xs, mm, mv, axis=axis, fix_gamma=fix_gamma, eps=1e-3)
        if create_graph:        # the composite rule, recorded through nd ops
            grads = mx.autograd.grad(y, xs, head_grads=nd.array(head, dtype=dtype),
                                     create_graph=True)
        else:                   # plain backward: the fused kernel
            y.backward(nd.array(head, dtype=dtype))
            grads = [v.grad for v in xs]
        assert [g.dtype for g in grads] == [np.dtype(dtype), np.dtype(pdt), np.dtype(pdt)]
        return y.asnumpy(), [g.asnumpy().astype(np.float64) for g in grads]

    y0, g0 = run(False)
    y1, g1 = run(True)
    red = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    xm = x.astype(np.float64)
    ref = (xm - xm.mean(red, keepdims=True)) / np.sqrt(xm.var(red, keepdims=True) + 1e-3)
    cs = [1] * len(shape)
    cs[axis] = C
    if not fix_gamma:
        ref = ref * gamma.astype(np.float64).reshape(cs)
    ref = ref + beta.astype(np.float64).reshape(cs)
    tol = {"float64": 1e-10, "float32": 2e-4, "float16": 2e-2}[dtype]
    np.testing.assert_allclose(y0.astype(np.float64), ref, rtol=tol, atol=tol)
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.abs(b).max()))
    if fix_gamma:
        np.testing.assert_array_equal(g0[1], 0)


def test_max_pool_route_keeps_a_gradient_inf_to_the_first_max_only():
    # ties (the zeros after a ReLU) and an infinite output gradient: the first maximum of
    # each window gets it, the other cells exactly 0 (no 0 * inf)
    x = np.array([[[[0.0, 0.0, 1.0, 2.0], [0.0, 0.0, 2.0, 2.0]]]])
    g = np.array([[[[np.inf, 3.0]]]])
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, kernel=(2, 2), stride=(2, 2), pool_type="max")
    y.backward(nd.array(g, dtype="float64"))
    np.testing.assert_array_equal(xa.grad.asnumpy(),
                                  [[[[np.inf, 0, 0, 3.0], [0, 0, 0, 0]]]])


def test_max_pool_route_disjoint_matches_the_argmax_route(rng):
    x = np.maximum(rng.standard_normal((3, 4, 6, 8)), 0).astype(np.float32)   # many ties
    g = rng.standard_normal((3, 4, 3, 4)).astype(np.float32)
    from gpunda.ops.nn import conv as nn_conv
    from gpunda.ops.registry import get_op
    p = get_op("_pool_max_route").parse_params(dict(kernel=(2, 2), stride=(2, 2), pad=(0, 0)))
    fast = nn_conv._pool_max_route(np, p, x, g)
    arg, (kernel, stride, pad, out, extra) = nn_conv._argmax_windows(np, p, x)
    ref = np.zeros_like(x)
    for j, sl in enumerate(nn_conv._window_slices(kernel, stride, out)):
        ref[sl] = np.where(arg == j, g, 0)
    np.testing.assert_array_equal(fast, ref)


def test_chunks_cover_the_batch(monkeypatch):
    # the many-chunks runs above must really run in several chunks
    monkeypatch.setattr(_conv_grid, "WHOLE_BATCH_BYTES", 0)
    monkeypatch.setattr(_conv_grid, "MIN_GEMM_COLUMNS", 1)
    x = np.zeros((5, 2, 6, 5))
    grid = _conv_grid._Grid(x, (3, 3), (1, 1), (1, 1), (6, 5), 256)
    spans = [(n0, n1) for n0, n1, _ in grid.chunks(x)]
    assert len(spans) == 5 and spans[0] == (0, 1) and spans[-1] == (4, 5)
    assert _conv_grid.samples_per_chunk(64, 1000, 1 << 30) == 64


def test_chunks_span_at_least_min_gemm_columns(monkeypatch):
    # a sample of 49 cells (a 7x7 map) whose columns fill the chunk alone still goes
    # through with enough samples for a GEMM of MIN_GEMM_COLUMNS columns
    monkeypatch.setattr(_conv_grid, "MIN_GEMM_COLUMNS", 512)
    monkeypatch.setattr(_conv_grid, "WHOLE_BATCH_BYTES", 0)
    assert _conv_grid.samples_per_chunk(64, 4000, 1000, cells=49) == 11     # ceil(512 / 49)
    assert _conv_grid.samples_per_chunk(8, 4000, 1000, cells=49) == 8
    assert _conv_grid.samples_per_chunk(64, 4000, 8000, cells=1024) == 2    # the bytes rule


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (1, 1, 2, 2), (3, 2, 5, 6)])
def test_pooling_2x2_matches_naive(rng, kind, shape):
    from test_conv import ref_pool
    x = rng.standard_normal(shape)
    x[0, 0, 0, :2] = x[0, 0, 1, :2] = 7.0     # a tie inside one window
    y = nd.Pooling(nd.array(x, dtype="float64"), kernel=(2, 2), stride=(2, 2), pool_type=kind)
    np.testing.assert_allclose(y.asnumpy(), ref_pool(x, (2, 2), (2, 2), (0, 0), kind),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,kernel", [((1, 2, 10), (3,)), ((1, 2, 7, 5), (2, 2)),
                                          ((1, 1, 5, 5, 4), (2, 2, 3))])
def test_max_pool_route_zeroes_cells_outside_every_window(rng, shape, kernel):
    # stride == kernel that does not divide the size: the last cells belong to no window
    x = nd.array(rng.standard_normal(shape))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(x, kernel=kernel, stride=kernel, pool_type="max")
    y.backward()
    g = x.grad.asnumpy()
    inside = tuple(slice(0, (s // k) * k) for s, k in zip(shape[2:], kernel))
    outside = g.copy()
    outside[(slice(None), slice(None)) + inside] = 0
    np.testing.assert_array_equal(outside, 0)
    np.testing.assert_allclose(g.sum(), np.prod(y.shape))


def test_a_kernel_as_large_as_the_image_takes_the_compact_routes(rng):
    # the row grid would make padded_w / out_w = 12 times the columns, and the transposed
    # convolution 144 input cells per kernel position against col2im's one output cell
    x = rng.standard_normal((2, 3, 12, 12))
    w = rng.standard_normal((4, 3, 12, 12))
    geo = ((12, 12), (1, 1), (1, 1), (0, 0))
    assert not _conv_grid.eligible(np, x, (12, 12), (1, 1), (0, 0), (1, 1))
    assert _conv_kernels.transposed_pad(*geo, 4, (1, 1), x.shape) is None
    assert _conv_kernels.conv_backward(np, np.ones((2, 4, 1, 1)), x, w, *geo, 1) is None
    xa, wa = nd.array(x, dtype="float64"), nd.array(w, dtype="float64")
    xa.attach_grad()
    wa.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(xa, wa, kernel=(12, 12), num_filter=4, no_bias=True)
    gy = rng.standard_normal((2, 4, 1, 1))
    y.backward(nd.array(gy, dtype="float64"))
    np.testing.assert_allclose(y.asnumpy(), ref_conv(x, w, None, (1, 1), (0, 0), (1, 1), 1),
                               rtol=1e-10)
    dx, dw = ref_conv_grads(x, w, gy, (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(xa.grad.asnumpy(), dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(wa.grad.asnumpy(), dw, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_convolution_of_an_empty_batch(stride):
    with mx.util.np_shape(True):        # zero sizes are known sizes only in np-shape mode
        x = nd.zeros((0, 2, 5, 5))
        w = nd.array(np.ones((3, 2, 3, 3)))
        x.attach_grad()
        w.attach_grad()
        with mx.autograd.record():
            y = nd.Convolution(x, w, kernel=(3, 3), stride=stride, pad=(1, 1), num_filter=3,
                               no_bias=True)
        y.backward()
    out = 5 if stride == (1, 1) else 3
    assert y.shape == (0, 3, out, out) and x.grad.shape == (0, 2, 5, 5)
    np.testing.assert_array_equal(w.grad.asnumpy(), 0)


def test_same_convolutions_take_flat_rows_and_others_the_row_grid(rng, monkeypatch):
    taken = []
    for mod, name in ((_conv_flat, "flat"), (_conv_grid, "grid")):
        for fn in ("forward", "backward", "weight_grad"):
            real = getattr(mod, fn)

            def spy(*a, _real=real, _tag=f"{name}.{fn}", **k):
                taken.append(_tag)
                return _real(*a, **k)
            monkeypatch.setattr(mod, fn, spy)
    x = nd.array(rng.standard_normal((2, 3, 6, 6)), ctx=mx.cpu())   # the NumPy kernels
    w = nd.array(rng.standard_normal((4, 3, 3, 3)), ctx=mx.cpu())
    # the valid convolution's data gradient would need more columns than col2im's, so
    # it runs apart from the weight gradient (transposed_pad)
    for pad, routes in (((1, 1), ["flat.forward", "flat.backward"]),
                        ((0, 0), ["grid.forward", "grid.weight_grad"])):
        x.attach_grad()
        w.attach_grad()
        with mx.autograd.record():
            y = nd.Convolution(x, w, no_bias=True, num_filter=4, kernel=(3, 3), pad=pad)
        y.backward()
        assert taken == routes, (pad, taken)
        taken.clear()


@pytest.mark.parametrize("shape", [(3, 4, 6, 8), (2, 3, 4, 4), (1, 1, 2, 2)])
def test_planar_2x2_max_pool_route_matches_the_strided_route(rng, shape):
    from gpunda.ops.kernels import pool as _pool_kernels
    from gpunda.ops.nn import conv as nn_conv
    x = np.maximum(rng.standard_normal(shape), 0).astype(np.float32)    # many ties
    x[0, 0, 0, :2] = -np.inf
    out = (shape[2] // 2, shape[3] // 2)
    g = rng.standard_normal(shape[:2] + out).astype(np.float32)
    planar = _pool_kernels.route_max_2x2(x, g)
    assert planar is not None
    strided = nn_conv._route_disjoint(np, x, g, (2, 2), (2, 2), (0, 0), out, (0, 0))
    np.testing.assert_array_equal(planar, strided)


def test_planar_2x2_max_pool_route_leaves_nan_data_and_non_finite_gradients(rng):
    from gpunda.ops.kernels import pool as _pool_kernels
    x = rng.standard_normal((2, 2, 4, 4))
    g = rng.standard_normal((2, 2, 2, 2))
    assert _pool_kernels.route_max_2x2(x, g) is not None
    bad_x = x.copy()
    bad_x[1, 1, 3, 2] = np.nan
    assert _pool_kernels.route_max_2x2(bad_x, g) is None
    bad_g = g.copy()
    bad_g[0, 1, 1, 0] = np.inf
    assert _pool_kernels.route_max_2x2(x, bad_g) is None
    wide = rng.standard_normal((1, 1, 2, 2 * _pool_kernels._MAX_OUT_W + 2))
    assert _pool_kernels.route_max_2x2(wide, rng.standard_normal((1, 1, 1, wide.shape[3] // 2))) \
        is None
