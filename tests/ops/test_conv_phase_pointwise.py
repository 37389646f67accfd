"""The phase-grid data gradient of strided convolutions and the batch-wide 1x1 GEMMs
(ops/kernels/conv_phase.py, conv_pointwise.py), each against naive loops in float64,
float32 against the float64 loops, central finite differences, and a spy that the
route under test is the one taken."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.ops.kernels import conv as _conv_kernels
from gpunda.ops.kernels import conv_grid as _conv_grid
from gpunda.ops.kernels import conv_phase as _conv_phase
from gpunda.ops.kernels import conv_pointwise as _conv_pw

from test_conv import _fd_check, ref_conv
from test_conv_kernels import ref_conv_grads


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # the NumPy convolution routes (phase grids, pointwise GEMMs) are the CPU's; on a GPU context
    # the CuPy path runs instead
    with mx.cpu():
        yield


nd = mx.nd


def _spy(monkeypatch, mod, names):
    taken = []
    for fn in names:
        real = getattr(mod, fn)

        def spy(*a, _real=real, _tag=fn, **k):
            taken.append(_tag)
            return _real(*a, **k)
        monkeypatch.setattr(mod, fn, spy)
    return taken


def _run(x, w, gy, dtype, **geo):
    """(y, dx, dW) of nd.Convolution in ``dtype`` (backward through autograd)."""
    xa, wa = nd.array(x, dtype=dtype), nd.array(w, dtype=dtype)
    xa.attach_grad()
    wa.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(xa, wa, no_bias=True, num_filter=w.shape[0], **geo)
    y.backward(nd.array(gy, dtype=dtype))
    return y.asnumpy(), xa.grad.asnumpy(), wa.grad.asnumpy()


@pytest.fixture(params=[1 << 30, 256], ids=["one-chunk", "many-chunks"])
def chunks(request, monkeypatch):
    monkeypatch.setattr(_conv_kernels, "_CHUNK_BYTES", request.param)
    if request.param < 1 << 20:
        monkeypatch.setattr(_conv_grid, "WHOLE_BATCH_BYTES", 0)
        monkeypatch.setattr(_conv_grid, "MIN_GEMM_COLUMNS", 1)
    return request.param


STRIDED = [   # (N, C, F, spatial, kernel, stride, pad, dilate, groups)
    (3, 2, 3, (6, 6), (3, 3), (2, 2), (1, 1), (1, 1), 1),     # ResNet's stride-2 3x3
    (1, 3, 2, (9, 11), (3, 3), (2, 2), (1, 1), (1, 1), 1),    # batch 1, odd sizes
    (2, 2, 4, (8, 8), (3, 3), (2, 2), (0, 0), (1, 1), 1),     # last row/column read by no window
    (2, 2, 3, (10, 11), (3, 3), (3, 3), (0, 0), (1, 1), 1),   # ... and outside every phase grid
    (2, 4, 4, (7, 8), (3, 4), (2, 3), (1, 2), (1, 1), 2),     # uneven strides, groups
    (2, 2, 3, (9, 9), (3, 3), (2, 2), (1, 1), (2, 1), 1),     # dilated
    (2, 2, 3, (10, 7), (5, 3), (3, 2), (2, 1), (1, 1), 1),    # stride 3, 5-row kernel
    (2, 3, 2, (6, 7), (3, 3), (2, 1), (1, 1), (1, 1), 1),     # strided rows only
]


@pytest.mark.parametrize("N,C,F,sp,kernel,stride,pad,dilate,groups", STRIDED)
def test_strided_data_gradient_takes_phase_grids_and_matches_naive_loops(
        rng, monkeypatch, chunks, N, C, F, sp, kernel, stride, pad, dilate, groups):
    taken = _spy(monkeypatch, _conv_phase, ["data_grad"])
    x = rng.standard_normal((N, C) + sp)
    w = rng.standard_normal((F, C // groups) + kernel)
    geo = dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_group=groups)
    ref_y = ref_conv(x, w, None, stride, pad, dilate, groups)
    gy = rng.standard_normal(ref_y.shape)
    ref_dx, ref_dw = ref_conv_grads(x, w, gy, stride, pad, dilate, groups)
    y, dx, dw = _run(x, w, gy, "float64", **geo)
    assert taken == ["data_grad"]
    np.testing.assert_allclose(y, ref_y, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw, ref_dw, rtol=1e-10, atol=1e-10)
    # float32 within float32 rounding of the float64 loops
    y32, dx32, dw32 = _run(x, w, gy, "float32", **geo)
    np.testing.assert_allclose(dx32, ref_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw32, ref_dw, rtol=1e-4, atol=1e-4)


def test_strided_data_gradient_finite_differences(rng):
    kw = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=3, no_bias=True)
    arrays = [rng.standard_normal((2, 2, 7, 6)), rng.standard_normal((3, 2, 3, 3))]
    _fd_check(lambda *a: nd.Convolution(*a, **kw), arrays, [0, 1])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_strided_data_gradient_with_a_non_finite_kernel_takes_col2im(rng, monkeypatch, bad):
    # a zero of the grid's extra columns times an inf weight would be NaN in cells
    # where the naive sum has none: the phase route declines, col2im gives the sums
    x = rng.standard_normal((2, 2, 6, 6))
    w = rng.standard_normal((3, 2, 3, 3))
    w[1, 0, 2, 1] = bad
    gy = rng.standard_normal((2, 3, 3, 3))
    geo = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    assert _conv_phase.data_grad(gy, w, (3, 3), (2, 2), (1, 1), (1, 1), 1, x.shape,
                                 1 << 20) is None
    _, dx, _ = _run(x, w, gy, "float64", **geo)
    with np.errstate(invalid="ignore"):
        ref_dx, _ = ref_conv_grads(x, w, gy, (2, 2), (1, 1), (1, 1), 1)
    np.testing.assert_array_equal(np.isnan(dx), np.isnan(ref_dx))
    np.testing.assert_array_equal(np.isinf(dx), np.isinf(ref_dx))
    ok = np.isfinite(ref_dx)
    np.testing.assert_allclose(dx[ok], ref_dx[ok], rtol=1e-10, atol=1e-10)


def test_phase_grids_only_where_the_extra_columns_are_few():
    x = np.zeros((1, 1, 8, 8))
    assert _conv_phase.eligible(np, x, (3, 3), (2, 2), (1, 1), (1, 1), (4, 4))
    # a kernel much wider than the stride adds more than half again as many columns
    assert not _conv_phase.eligible(np, x, (1, 7), (2, 2), (1, 1), (0, 3), (4, 4))
    assert not _conv_phase.eligible(np, x, (3, 3), (1, 1), (1, 1), (1, 1), (8, 8))
    assert not _conv_phase.eligible(np, x, (1, 1), (2, 2), (1, 1), (0, 0), (4, 4))


# ---------------------------------------------------------------------------
# 1x1 convolutions as one GEMM over the batch

@pytest.fixture
def pointwise_everywhere(monkeypatch):
    """Every 1x1 convolution on the batch-wide GEMMs (the cost rule wants many channels
    and small maps), with a spy on the three products."""
    monkeypatch.setattr(_conv_pw, "_MIN_CHANNELS", 0)
    monkeypatch.setattr(_conv_pw, "_MAX_CELLS", {"forward": 10 ** 9, "weight": 10 ** 9,
                                                 "data": 10 ** 9})
    return _spy(monkeypatch, _conv_pw, ["forward", "weight_grad", "data_grad"])


POINTWISE = [   # (N, C, F, spatial, stride, groups)
    (3, 4, 5, (5, 6), (1, 1), 1),
    (1, 3, 2, (7, 7), (2, 2), 1),        # batch 1, strided: the skipped cells get zeros
    (2, 4, 6, (6, 5), (2, 3), 2),        # groups, uneven strides
    (2, 3, 4, (9,), (2,), 1),            # 1-D
    (2, 2, 3, (3, 4, 5), (1, 2, 1), 1),  # 3-D
]


@pytest.mark.parametrize("N,C,F,sp,stride,groups", POINTWISE)
def test_pointwise_gemms_match_naive_loops(rng, pointwise_everywhere, N, C, F, sp, stride,
                                           groups):
    nsp = len(sp)
    kernel, pad, dilate = (1,) * nsp, (0,) * nsp, (1,) * nsp
    x = rng.standard_normal((N, C) + sp)
    w = rng.standard_normal((F, C // groups) + kernel)
    ref_y = ref_conv(x, w, None, stride, pad, dilate, groups)
    gy = rng.standard_normal(ref_y.shape)
    ref_dx, ref_dw = ref_conv_grads(x, w, gy, stride, pad, dilate, groups)
    geo = dict(kernel=kernel, stride=stride, num_group=groups)
    y, dx, dw = _run(x, w, gy, "float64", **geo)
    assert sorted(pointwise_everywhere) == ["data_grad", "forward", "weight_grad"]
    np.testing.assert_allclose(y, ref_y, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw, ref_dw, rtol=1e-10, atol=1e-10)
    y32, dx32, dw32 = _run(x, w, gy, "float32", **geo)
    assert y32.dtype == dx32.dtype == dw32.dtype == np.float32
    np.testing.assert_allclose(y32, ref_y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx32, ref_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw32, ref_dw, rtol=1e-4, atol=1e-4)


def test_pointwise_gemms_finite_differences(rng, pointwise_everywhere):
    kw = dict(kernel=(1, 1), stride=(2, 2), num_filter=3)
    arrays = [rng.standard_normal((2, 4, 5, 4)), rng.standard_normal((3, 4, 1, 1)),
              rng.standard_normal(3)]
    _fd_check(lambda *a: nd.Convolution(*a, **kw), arrays, [0, 1, 2])
    assert "forward" in pointwise_everywhere


def test_pointwise_cost_rule():
    def ok(C, F, sp, product):
        x = np.zeros((2, C) + sp)
        return _conv_pw.eligible(np, x, (1, 1), (0, 0), sp, C, F, product)
    # ResNet-50's 1x1 layers on 7x7 maps take it in all three products, on 14x14 the
    # data gradient only, on 28x28 none; ResNet-20's narrow projections never
    assert all(ok(2048, 512, (7, 7), p) for p in ("forward", "weight", "data"))
    assert ok(1024, 256, (14, 14), "data") and not ok(1024, 256, (14, 14), "forward")
    assert not ok(512, 128, (28, 28), "data")
    assert not ok(32, 64, (8, 8), "forward") and not ok(16, 32, (16, 16), "data")
    # a padded or wider kernel is no pointwise product
    x = np.zeros((2, 512, 7, 7))
    assert not _conv_pw.eligible(np, x, (1, 1), (1, 1), (9, 9), 512, 512, "forward")
    assert not _conv_pw.eligible(np, x, (3, 3), (1, 1), (7, 7), 512, 512, "forward")
