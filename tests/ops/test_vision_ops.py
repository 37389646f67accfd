"""Vision ops (ROIPooling, ROIAlign, PSROIPooling, BilinearResize2D,
AdaptiveAvgPooling2D) against plain NumPy loops written from MXNet 1.9.1's kernels."""
import math

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd


def _cround(v):
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def ref_roi_pool(data, rois, pooled, scale):
    n, c, h, w = data.shape
    ph_n, pw_n = pooled
    out = np.zeros((len(rois), c, ph_n, pw_n), data.dtype)
    grad_pos = {}
    for r, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1, x2, y2 = (_cround(v * scale) for v in roi[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for ci in range(c):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    hs = min(max(math.floor(ph * rh / ph_n) + y1, 0), h)
                    he = min(max(math.ceil((ph + 1) * rh / ph_n) + y1, 0), h)
                    ws = min(max(math.floor(pw * rw / pw_n) + x1, 0), w)
                    we = min(max(math.ceil((pw + 1) * rw / pw_n) + x1, 0), w)
                    if he <= hs or we <= ws or not 0 <= b < n:
                        continue
                    win = data[b, ci, hs:he, ws:we]
                    k = np.argmax(win)
                    out[r, ci, ph, pw] = win.flat[k]
                    grad_pos[(r, ci, ph, pw)] = (b, ci, hs + k // (we - ws), ws + k % (we - ws))
    return out, grad_pos


def test_roi_pooling_forward_and_gradient():
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (2, 3, 9, 7))
    rois = np.array([[0, 1.1, 1.1, 6.2, 6.2], [1, 0.4, 2.5, 3.5, 8.6], [1, 3, 3, 3, 3],
                     [0, -3, -2, 20, 30], [-1, 0, 0, 2, 2]])
    x, r = nd.array(data, dtype="float64"), nd.array(rois, dtype="float64")
    x.attach_grad()
    og = rng.normal(size=(5, 3, 3, 2))
    with mx.autograd.record():
        y = nd.ROIPooling(x, r, pooled_size=(3, 2), spatial_scale=0.9)
    y.backward(nd.array(og, dtype="float64"))
    want, pos = ref_roi_pool(data, rois, (3, 2), 0.9)
    np.testing.assert_allclose(y.asnumpy(), want)
    dx = np.zeros_like(data)
    for k, p in pos.items():
        dx[p] += og[k]
    np.testing.assert_allclose(x.grad.asnumpy(), dx)
    assert np.all(y.asnumpy()[4] == 0)       # invalid batch index


def _bilinear(plane, y, x):
    h, w = plane.shape
    if y < -1 or y > h or x < -1 or x > w:
        return {}
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yl = yh = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xl = xh = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    wts = {}
    for key, wt in (((yl, xl), (1 - ly) * (1 - lx)), ((yl, xh), (1 - ly) * lx),
                    ((yh, xl), ly * (1 - lx)), ((yh, xh), ly * lx)):
        wts[key] = wts.get(key, 0.0) + wt
    return wts


def ref_roi_align(data, rois, pooled, scale, ratio, ps=False, aligned=False):
    n, c, h, w = data.shape
    ph_n, pw_n = pooled
    c_out = c // (ph_n * pw_n) if ps else c
    out = np.zeros((len(rois), c_out, ph_n, pw_n))
    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(rois):
        b, box = (int(roi[0]), roi[1:]) if len(roi) == 5 else (0, roi)
        x1, y1, x2, y2 = (v * scale - off for v in box)
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph_n, rw / pw_n
        gh = ratio if ratio > 0 else math.ceil(rh / ph_n)
        gw = ratio if ratio > 0 else math.ceil(rw / pw_n)
        for co in range(c_out):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    ci = co * ph_n * pw_n + ph * pw_n + pw if ps else co
                    acc = 0.0
                    for iy in range(gh):
                        for ix in range(gw):
                            yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                            xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                            for (qy, qx), wt in _bilinear(data[b, ci], yy, xx).items():
                                acc += wt * data[b, ci, qy, qx]
                    out[r, co, ph, pw] = acc / max(gh * gw, 1)
    return out


ROIS = np.array([[0, 0.5, 0.7, 6.2, 7.9], [1, 1.1, 0.2, 9.0, 5.5], [1, -2, -1, 3, 2],
                 [0, 4, 4, 4.2, 4.1]])


@pytest.mark.parametrize("ratio,ps,aligned", [(-1, False, False), (2, False, False),
                                              (0, True, False), (-1, False, True)])
def test_roi_align_matches_loops(ratio, ps, aligned):
    rng = np.random.default_rng(1)
    c = 12 if ps else 3
    data = rng.uniform(-1, 1, (2, c, 8, 10))
    got = nd.contrib.ROIAlign(nd.array(data, dtype="float64"), nd.array(ROIS, dtype="float64"),
                              pooled_size=(2, 3), spatial_scale=0.8, sample_ratio=ratio,
                              position_sensitive=ps, aligned=aligned)
    want = ref_roi_align(data, ROIS, (2, 3), 0.8, ratio, ps, aligned)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-12)


def test_roi_align_gradient_is_the_adjoint_and_rois_get_none():
    rng = np.random.default_rng(2)
    data = rng.uniform(-1, 1, (2, 3, 8, 10))
    x, r = nd.array(data, dtype="float64"), nd.array(ROIS[:, 1:], dtype="float64")
    x.attach_grad()
    r.attach_grad()
    og = rng.normal(size=(4, 3, 2, 2))
    with mx.autograd.record():
        y = nd.contrib.ROIAlign(x, r, pooled_size=(2, 2), spatial_scale=1.0)
    y.backward(nd.array(og, dtype="float64"))
    # <A x, g> = <x, A^T g> for the linear map A
    probe = rng.normal(size=data.shape)
    fwd = ref_roi_align(probe, ROIS[:, 1:], (2, 2), 1.0, -1)
    np.testing.assert_allclose((fwd * og).sum(), (probe * x.grad.asnumpy()).sum(), rtol=1e-10)
    assert np.all(r.grad.asnumpy() == 0)


def _many_rois(rng, k, h, w, n):
    """ROIs of every size in a (h, w) map at scale 1: specks, big ones, ones past the
    edges, and some with an out-of-range batch index."""
    xy = rng.uniform(-3, max(h, w), (k, 2))
    wh = np.exp(rng.uniform(np.log(0.2), np.log(2.5 * max(h, w)), (k, 2)))
    batch = rng.integers(0, n, k).astype(float)
    batch[::17] = n                                  # out of range: zeros
    return np.concatenate([batch[:, None], xy, xy + wh], axis=1)


@pytest.mark.parametrize("ratio,aligned,chunk", [(2, False, None), (-1, False, None),
                                                 (3, True, None), (2, False, 1)])
def test_roi_align_many_rois_matches_loops(ratio, aligned, chunk, monkeypatch):
    # grids of many sizes go in chunks of equal rounded size (NOTE [ROI cells]); chunk=1
    # makes every chunk one ROI
    from gpunda.ops.vision import _roi_cells
    if chunk is not None:
        monkeypatch.setattr(_roi_cells, "_CHUNK_FLOATS", chunk)
    rng = np.random.default_rng(5 + ratio)
    data = rng.uniform(-1, 1, (2, 2, 13, 17))
    rois = _many_rois(rng, 60, 13, 17, 2)
    kw = dict(pooled_size=(4, 3), spatial_scale=1.0, sample_ratio=ratio, aligned=aligned)
    got = nd.contrib.ROIAlign(nd.array(data, dtype="float64"), nd.array(rois, dtype="float64"),
                              **kw)
    ok = rois[:, 0] < 2
    want = np.zeros((60, 2, 4, 3))
    want[ok] = ref_roi_align(data, rois[ok], (4, 3), 1.0, ratio, aligned=aligned)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-12)
    got32 = nd.contrib.ROIAlign(nd.array(data, dtype="float32"), nd.array(rois), **kw)
    np.testing.assert_allclose(got32.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_roi_align_reads_only_the_cells_it_samples():
    # as MXNet: a NaN or inf in a cell that no sample of an ROI touches stays out of it
    data = np.zeros((1, 2, 12, 12))
    data[0, :, 2:6, 2:6] = np.arange(16).reshape(4, 4)
    data[0, 0, 10, 10] = np.nan
    data[0, 1, 0, 11] = np.inf
    rois = np.array([[0, 2, 2, 5, 5], [0, 9, 9, 11, 11]])
    got = nd.contrib.ROIAlign(nd.array(data, dtype="float64"), nd.array(rois, dtype="float64"),
                              pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=2).asnumpy()
    np.testing.assert_allclose(got[0], ref_roi_align(data, rois[:1], (2, 2), 1.0, 2)[0])
    assert np.isnan(got[1, 0]).any() and np.isfinite(got[1, 1]).all()


def test_roi_ops_reject_bad_rois():
    x = nd.ones((1, 1, 4, 4))
    with pytest.raises(GpundaError, match="rois"):
        nd.contrib.ROIAlign(x, nd.ones((2, 3)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(GpundaError, match="rois"):
        nd.ROIPooling(x, nd.ones((2, 4)), pooled_size=(2, 2), spatial_scale=1.0)


def ref_psroi(data, rois, scale, out_dim, k, g):
    n, c, h, w = data.shape
    out = np.zeros((len(rois), out_dim, k, k))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1 = _cround(roi[1]) * scale, _cround(roi[2]) * scale
        x2, y2 = (_cround(roi[3]) + 1) * scale, (_cround(roi[4]) + 1) * scale
        rw, rh = max(x2 - x1, 0.1), max(y2 - y1, 0.1)
        for ct in range(out_dim):
            for ph in range(k):
                for pw in range(k):
                    hs = min(max(math.floor(ph * rh / k + y1), 0), h)
                    he = min(max(math.ceil((ph + 1) * rh / k + y1), 0), h)
                    ws = min(max(math.floor(pw * rw / k + x1), 0), w)
                    we = min(max(math.ceil((pw + 1) * rw / k + x1), 0), w)
                    gh = min(max(math.floor(ph * g / k), 0), g - 1)
                    gw = min(max(math.floor(pw * g / k), 0), g - 1)
                    ci = (ct * g + gh) * g + gw
                    if he > hs and we > ws:
                        out[r, ct, ph, pw] = data[b, ci, hs:he, ws:we].mean()
    return out


@pytest.mark.parametrize("k,g", [(3, 3), (3, 2)])
def test_psroi_pooling_matches_loops(k, g):
    rng = np.random.default_rng(3)
    data = rng.uniform(-1, 1, (2, 2 * g * g, 9, 9))
    rois = np.array([[0, 10, 22, 120, 130], [1, 20, 15, 60, 140], [1, 3, 3, 3, 3]])
    got = nd.contrib.PSROIPooling(nd.array(data, dtype="float64"), nd.array(rois, dtype="float64"),
                                  spatial_scale=0.0625, output_dim=2, pooled_size=k,
                                  group_size=g)
    np.testing.assert_allclose(got.asnumpy(), ref_psroi(data, rois, 0.0625, 2, k, g),
                               rtol=1e-10)


def ref_resize(x, oh, ow, align):
    n, c, h, w = x.shape
    if (oh, ow) == (h, w):
        return x.copy()

    def src(n_in, n_out, i):
        if n_out <= 1:
            return 0.0
        if align:
            return (n_in - 1) / (n_out - 1) * i
        return max(n_in / n_out * (i + 0.5) - 0.5, 0.0)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        hr = src(h, oh, i)
        h1 = int(hr)
        hp = 1 if h1 < h - 1 else 0
        hl = hr - h1
        for j in range(ow):
            wr = src(w, ow, j)
            w1 = int(wr)
            wp = 1 if w1 < w - 1 else 0
            wl = wr - w1
            y[:, :, i, j] = ((1 - hl) * ((1 - wl) * x[:, :, h1, w1] + wl * x[:, :, h1, w1 + wp]) +
                             hl * ((1 - wl) * x[:, :, h1 + hp, w1] +
                                   wl * x[:, :, h1 + hp, w1 + wp]))
    return y


@pytest.mark.parametrize("oh,ow,align", [(5, 5, True), (13, 17, True), (3, 7, False),
                                         (1, 4, True), (6, 4, False)])
def test_bilinear_resize_size_mode(oh, ow, align):
    x = np.random.default_rng(4).uniform(size=(2, 2, 10, 9))
    got = nd.contrib.BilinearResize2D(nd.array(x, dtype="float64"), height=oh, width=ow,
                                      align_corners=align)
    np.testing.assert_allclose(got.asnumpy(), ref_resize(x, oh, ow, align), rtol=1e-5)


@pytest.mark.parametrize("mode,want", [("to_even_down", (20, 8)), ("to_even_up", (22, 10)),
                                       ("to_odd_down", (21, 9)), ("to_odd_up", (21, 9)),
                                       ("odd_scale", (11, 5))])
def test_bilinear_resize_modes_set_the_shape(mode, want):
    x = nd.ones((1, 1, 21, 9))
    kw = dict(scale_height=0.5, scale_width=0.5) if mode == "odd_scale" else {}
    assert nd.contrib.BilinearResize2D(x, mode=mode, **kw).shape[2:] == want


def test_bilinear_resize_like_and_gradient_is_adjoint():
    rng = np.random.default_rng(5)
    x = nd.array(rng.uniform(size=(1, 2, 4, 6)), dtype="float64")
    like = nd.zeros((1, 1, 7, 3), dtype="float64")
    x.attach_grad()
    og = rng.normal(size=(1, 2, 7, 3))
    with mx.autograd.record():
        y = nd.contrib.BilinearResize2D(x, like, mode="like")
    y.backward(nd.array(og, dtype="float64"))
    probe = rng.normal(size=(1, 2, 4, 6))
    lhs = (ref_resize(probe, 7, 3, True) * og).sum()
    np.testing.assert_allclose(lhs, (probe * x.grad.asnumpy()).sum(), rtol=1e-10)


def ref_adaptive(x, oh, ow):
    n, c, h, w = x.shape
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        hs, he = (i * h) // oh, math.ceil((i + 1) * h / oh)
        for j in range(ow):
            ws, we = (j * w) // ow, math.ceil((j + 1) * w / ow)
            y[:, :, i, j] = x[:, :, hs:he, ws:we].mean(axis=(2, 3))
    return y


@pytest.mark.parametrize("size,hw", [((), (1, 1)), (3, (3, 3)), ((4, 7), (4, 7)),
                                     ((10, 1), (10, 1))])
def test_adaptive_avg_pooling(size, hw):
    x = np.random.default_rng(6).uniform(size=(2, 3, 10, 7))
    got = nd.contrib.AdaptiveAvgPooling2D(nd.array(x, dtype="float64"), output_size=size)
    np.testing.assert_allclose(got.asnumpy(), ref_adaptive(x, *hw), rtol=1e-12)


def test_symbol_shapes():
    data, rois = mx.sym.var("data"), mx.sym.var("rois")
    s = mx.sym.ROIPooling(data, rois, pooled_size=(2, 3), spatial_scale=0.5)
    assert s.infer_shape(data=(1, 4, 8, 8), rois=(5, 5))[1] == [(5, 4, 2, 3)]
    s = mx.sym.contrib.ROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=0.5,
                                position_sensitive=True)
    assert s.infer_shape(data=(1, 8, 8, 8), rois=(5, 5))[1] == [(5, 2, 2, 2)]
    s = mx.sym.contrib.BilinearResize2D(data, scale_height=2.0, scale_width=0.5)
    assert s.infer_shape(data=(1, 4, 8, 8))[1] == [(1, 4, 16, 4)]


def test_grid_generator_affine_and_gradient():
    rng = np.random.default_rng(7)
    theta = rng.normal(size=(2, 6))
    h, w = 4, 5
    x = nd.array(theta, dtype="float64")
    x.attach_grad()
    og = rng.normal(size=(2, 2, h, w))
    with mx.autograd.record():
        y = nd.GridGenerator(x, transform_type="affine", target_shape=(h, w))
    y.backward(nd.array(og, dtype="float64"))
    xs, ys = np.meshgrid(np.linspace(-1, 1, w), np.linspace(-1, 1, h))
    pts = np.stack([xs, ys, np.ones_like(xs)])                      # (3, H, W)
    want = np.einsum("nij,jhw->nihw", theta.reshape(2, 2, 3), pts)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(),
                               np.einsum("nihw,jhw->nij", og, pts).reshape(2, 6), rtol=1e-12)


def test_grid_generator_warp():
    flow = np.random.default_rng(8).normal(size=(1, 2, 3, 6))
    y = nd.GridGenerator(nd.array(flow, dtype="float64"), transform_type="warp").asnumpy()
    xs, ys = np.meshgrid(np.arange(6.0), np.arange(3.0))
    np.testing.assert_allclose(y[0, 0], (flow[0, 0] + xs) / 2.5 - 1, rtol=1e-12)
    np.testing.assert_allclose(y[0, 1], (flow[0, 1] + ys) / 1.0 - 1, rtol=1e-12)
    with pytest.raises(GpundaError, match="GridGenerator"):
        nd.GridGenerator(nd.ones((1, 5)), transform_type="affine", target_shape=(2, 2))


def ref_sampler(data, grid):
    n, c, h, w = data.shape
    out = np.zeros((n, c) + grid.shape[2:])
    for b in range(n):
        for i in range(grid.shape[2]):
            for j in range(grid.shape[3]):
                y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
                x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
                y0, x0 = math.floor(y), math.floor(x)
                for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                    for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                        if 0 <= yy < h and 0 <= xx < w:
                            out[b, :, i, j] += wy * wx * data[b, :, yy, xx]
    return out


def test_bilinear_sampler_matches_loops_including_outside_points():
    rng = np.random.default_rng(9)
    data = rng.normal(size=(2, 3, 5, 6))
    grid = rng.uniform(-1.3, 1.3, size=(2, 2, 4, 3))
    got = nd.BilinearSampler(nd.array(data, dtype="float64"), nd.array(grid, dtype="float64"))
    np.testing.assert_allclose(got.asnumpy(), ref_sampler(data, grid), rtol=1e-10, atol=1e-12)


def test_spatial_transformer_is_grid_then_sampler():
    rng = np.random.default_rng(10)
    data = nd.array(rng.normal(size=(2, 3, 5, 6)), dtype="float64")
    loc = nd.array(rng.normal(scale=0.5, size=(2, 6)), dtype="float64")
    got = nd.SpatialTransformer(data, loc, target_shape=(4, 4), transform_type="affine",
                                sampler_type="bilinear")
    grid = nd.GridGenerator(loc, transform_type="affine", target_shape=(4, 4))
    np.testing.assert_allclose(got.asnumpy(), ref_sampler(data.asnumpy(), grid.asnumpy()),
                               rtol=1e-10, atol=1e-12)


def test_bilinear_sampler_second_order_raises():
    data = nd.ones((1, 1, 3, 3), dtype="float64")
    grid = nd.zeros((1, 2, 2, 2), dtype="float64")
    data.attach_grad()
    with mx.autograd.record():
        y = nd.BilinearSampler(data, grid)
        (g,) = mx.autograd.grad(y, [data], create_graph=True)
    with pytest.raises(GpundaError, match="non-differentiable because it didn.t register FGradient"):
        g.backward()
