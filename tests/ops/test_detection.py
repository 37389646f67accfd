"""The contrib detection ops (ops/vision/detection_box.py, multibox.py, proposal.py,
vision_rroi.py) against loop-by-loop NumPy references written here from MXNet 1.9.1's
CPU kernels; values of real MXNet for fixed inputs are in test_detection_mxnet.py."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda.base import GpundaError

nd = mx.nd


def _boxes(rng, n, scale=1.0):
    xy = rng.rand(n, 2) * scale
    return np.concatenate([xy, xy + rng.rand(n, 2) * scale * 0.5], axis=1)


def _iou(a, b, plus=0.0, clamp_area=True):
    """IoU of two corner boxes as MXNet's kernels compute it."""
    iw = max(min(a[2], b[2]) - max(a[0], b[0]) + plus, 0)
    ih = max(min(a[3], b[3]) - max(a[1], b[1]) + plus, 0)
    inter = iw * ih

    def area(x):
        w, h = x[2] - x[0] + plus, x[3] - x[1] + plus
        return 0.0 if clamp_area and (w < 0 or h < 0) else w * h
    union = area(a) + area(b) - inter
    return inter / union if union != 0 else float("nan")


# ----------------------------------------------------------------------------
# box_nms


def _ref_box_nms(data, thresh=0.5, valid=0.0, topk=-1, cs=2, si=1, ci=-1, bg=-1, force=False,
                 out_center=False):
    shape = data.shape
    x = data.reshape(-1, shape[-2], shape[-1])
    out = np.full_like(x, -1)
    record = np.full(x.shape[:2], -1.0)
    for b in range(x.shape[0]):
        cand = [i for i in range(x.shape[1]) if x[b, i, si] > valid and
                (ci < 0 or x[b, i, ci] != bg)]
        cand.sort(key=lambda i: -x[b, i, si])            # stable: ties keep their order
        cand = cand[:topk] if topk >= 0 else cand
        kept = []
        for i in cand:
            if all(not (_iou(x[b, i, cs:cs + 4], x[b, k, cs:cs + 4]) > thresh and
                        (force or ci < 0 or int(x[b, i, ci]) == int(x[b, k, ci])))
                   for k in kept):
                kept.append(i)
        for j, i in enumerate(kept):
            out[b, j] = x[b, i]
            record[b, j] = b * x.shape[1] + i
            if out_center and out[b, j, cs] >= 0:
                l, t, r, bt = out[b, j, cs:cs + 4]
                out[b, j, cs:cs + 4] = [(l + r) / 2, (t + bt) / 2, r - l, bt - t]
    return out.reshape(shape), record


def _nms_data(rng, b, n, ties=False):
    ids = rng.randint(0, 3, (b, n, 1))
    sc = rng.rand(b, n, 1)
    if ties:
        sc = np.round(sc * 4) / 4
    box = np.stack([_boxes(rng, n) for _ in range(b)])
    return np.concatenate([ids, sc, box], axis=2)


@pytest.mark.parametrize("params", [
    dict(), dict(thresh=0.3, ci=0), dict(thresh=0.2, ci=0, force=True, topk=5),
    dict(valid=0.4, topk=3, ci=0, bg=0), dict(thresh=0.1, out_center=True)])
def test_box_nms_matches_reference(params):
    rng = np.random.RandomState(len(str(params)))
    for ties in (False, True):
        data = _nms_data(rng, 3, 25, ties)
        want, record = _ref_box_nms(data, **params)
        names = dict(thresh="overlap_thresh", valid="valid_thresh", topk="topk", ci="id_index",
                     bg="background_id", force="force_suppress")
        kw = {names[k]: v for k, v in params.items() if k in names}
        if params.get("out_center"):
            kw["out_format"] = "center"
        got = nd.contrib.box_nms(nd.array(data, dtype="float64"), **kw)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
        # the gradient follows each kept box back to its input row
        x = nd.array(data, dtype="float64")
        x.attach_grad()
        with ag.record():
            y = nd.contrib.box_nms(x, **kw)
        head = rng.rand(*data.shape)
        y.backward(nd.array(head, dtype="float64"))
        grad = np.zeros((data.shape[0] * data.shape[1], data.shape[2]))
        flat = head.reshape(grad.shape)
        for row, src in enumerate(record.reshape(-1)):
            if src >= 0:
                grad[int(src)] = flat[row]
        np.testing.assert_allclose(x.grad.asnumpy(), grad.reshape(data.shape))


def test_box_nms_outputs_dtypes_and_layouts():
    rng = np.random.RandomState(0)
    data = rng.rand(2, 3, 7, 8)
    for dtype in ("float16", "float32", "float64"):
        out = nd.contrib.box_nms(nd.array(data, dtype=dtype), coord_start=3, score_index=0)
        assert out.dtype == np.dtype(dtype) and out.shape == data.shape
    # all outputs (with the hidden record) through out=
    outs = [nd.zeros(data.shape), nd.zeros((2, 3, 7, 1))]
    nd.contrib.box_nms(nd.array(data), out=outs)
    assert set(np.unique(outs[1].asnumpy())) <= set(range(-1, 42))
    # topk=0: the input unchanged, records in order
    out = nd.contrib.box_non_maximum_suppression(nd.array(data), topk=0)
    np.testing.assert_allclose(out.asnumpy(), data.astype(np.float32))
    # nothing valid: every row -1
    out = nd.contrib.box_nms(nd.array(data), valid_thresh=5)
    assert (out.asnumpy() == -1).all()


def test_box_nms_rejects_bad_layouts():
    x = nd.array(np.random.rand(4, 6))
    with pytest.raises(GpundaError, match="score_index=3 conflicts"):
        nd.contrib.box_nms(x, score_index=3)
    with pytest.raises(GpundaError, match="at least 6 elements"):
        nd.contrib.box_nms(x[:, :5], id_index=0)
    with pytest.raises(GpundaError, match="int32"):
        nd.contrib.box_nms(x.astype("int32"))
    with pytest.raises(GpundaError, match="in_format"):
        nd.contrib.box_nms(x, in_format="xywh")


def test_box_nms_symbol_shapes():
    s = mx.sym.contrib.box_nms(mx.sym.Variable("data"), id_index=0)
    _, outs, _ = s.infer_shape(data=(2, 10, 6))
    assert outs == [(2, 10, 6)]
    assert mx.contrib.sym.box_nms is mx.sym.contrib.box_nms


# ----------------------------------------------------------------------------
# box_iou, bipartite_matching, box_encode, box_decode


@pytest.mark.parametrize("fmt", ["corner", "center"])
def test_box_iou_matches_reference(fmt):
    rng = np.random.RandomState(3)
    a, b = _boxes(rng, 6).reshape(2, 3, 4), _boxes(rng, 4)
    a[0, 0] = [0.5, 0.5, 0.5, 0.5]                                   # empty box
    want = np.array([[_iou(x, y) if _iou(x, y) == _iou(x, y) else 0 for y in b]
                     for x in a.reshape(-1, 4)]).reshape(2, 3, 4)
    if fmt == "center":
        to_c = lambda z: np.concatenate([(z[..., :2] + z[..., 2:]) / 2,  # noqa: E731
                                         z[..., 2:] - z[..., :2]], axis=-1)
        a, b = to_c(a), to_c(b)
    got = nd.contrib.box_iou(nd.array(a, dtype="float64"), nd.array(b, dtype="float64"),
                             format=fmt)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-12)


def _ref_bipartite(s, thresh, ascend=False, topk=-1):
    thresh = float(np.float32(thresh))       # MXNet's threshold is a float parameter
    r, c = s.shape
    order = sorted(range(r * c), key=lambda k: s.flat[k] if ascend else -s.flat[k])
    rows, cols, count = -np.ones(r), -np.ones(c), 0
    for k in order:
        i, j = divmod(k, c)
        if rows[i] == -1 and cols[j] == -1:
            if not (s.flat[k] < thresh if ascend else s.flat[k] > thresh):
                break
            rows[i], cols[j] = j, i
            count += 1
            if 0 < topk < count:
                break
    return rows, cols


@pytest.mark.parametrize("params", [dict(thresh=1e-12), dict(thresh=0.4),
                                    dict(thresh=0.6, ascend=True), dict(thresh=0.1, topk=2)])
def test_bipartite_matching_matches_reference(params):
    rng = np.random.RandomState(4)
    s = np.round(rng.rand(3, 5, 6), 1)                          # with ties
    rows, cols = nd.contrib.bipartite_matching(
        nd.array(s, dtype="float64"), threshold=params["thresh"],
        is_ascend=params.get("ascend", False), topk=params.get("topk", -1))
    for b in range(3):
        want_r, want_c = _ref_bipartite(s[b], params["thresh"], params.get("ascend", False),
                                        params.get("topk", -1))
        np.testing.assert_array_equal(rows.asnumpy()[b], want_r)
        np.testing.assert_array_equal(cols.asnumpy()[b], want_c)


def _center(box):
    w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    return box[..., 0] + w / 2, box[..., 1] + h / 2, w, h


def test_box_encode_and_decode_match_reference():
    rng = np.random.RandomState(5)
    anchors = np.stack([_boxes(rng, 5) for _ in range(2)])
    refs = np.stack([_boxes(rng, 3) for _ in range(2)])
    samples = np.array([[1, 0, -1, 1, 1], [0, 1, 1, -1, 1]], dtype=float)
    matches = rng.randint(0, 3, (2, 5)).astype(float)
    # stds exact in float32: box_decode takes them as float parameters
    means, stds = np.array([0.0, 0.1, 0.0, -0.1]), np.array([0.125, 0.125, 0.25, 0.5])
    t, m = nd.contrib.box_encode(*[nd.array(v, dtype="float64") for v in
                                   (samples, matches, anchors, refs, means, stds)])
    ref = refs[np.arange(2)[:, None], matches.astype(int)]
    rx, ry, rw, rh = _center(ref)
    ax, ay, aw, ah = _center(anchors)
    want = (np.stack([(rx - ax) / aw, (ry - ay) / ah, np.log(rw / aw), np.log(rh / ah)], -1)
            - means) / stds
    pos = (samples > 0.5)[..., None]
    np.testing.assert_allclose(t.asnumpy(), np.where(pos, want, 0), rtol=1e-10)
    np.testing.assert_array_equal(m.asnumpy(), np.broadcast_to(pos, want.shape))
    # decoding the targets (means 0) gives the matched refs back
    t, _ = nd.contrib.box_encode(*[nd.array(v, dtype="float64") for v in
                                   (np.ones((2, 5)), matches, anchors, refs, 0 * means, stds)])
    for b in range(2):
        dec = nd.contrib.box_decode(t[b:b + 1], nd.array(anchors[b:b + 1], dtype="float64"),
                                    *stds, format="corner")
        # MXNet casts the std params to float32
        np.testing.assert_allclose(dec.asnumpy()[0], ref[b], rtol=1e-6)
    # clip bounds the log sizes
    big = nd.array([[[0, 0, 5.0, 5.0]]])
    dec = nd.contrib.box_decode(big, nd.array([[[0.5, 0.5, 1.0, 1.0]]]), clip=1.0)
    np.testing.assert_allclose(dec.asnumpy(), [[[0.5 - np.e / 2, 0.5 - np.e / 2,
                                                 0.5 + np.e / 2, 0.5 + np.e / 2]]], rtol=1e-6)


def test_zero_gradient_ops_give_zeros():
    x, y = nd.array(np.random.rand(3, 4)), nd.array(np.random.rand(2, 4))
    x.attach_grad()
    y.attach_grad()
    with ag.record():
        z = nd.contrib.box_iou(x, y) * 2
    z.backward()
    assert not x.grad.asnumpy().any() and not y.grad.asnumpy().any()


# ----------------------------------------------------------------------------
# MultiBoxPrior, MultiBoxDetection, MultiBoxTarget


def test_multibox_prior_matches_reference():
    h, w, sizes, ratios = 3, 5, (0.6, 0.3), (1.0, 2.0, 0.5)
    got = nd.contrib.MultiBoxPrior(nd.zeros((1, 2, h, w)), sizes=sizes, ratios=ratios,
                                   offsets=(0.4, 0.5)).asnumpy()
    want = []
    for r in range(h):
        for c in range(w):
            cy, cx = (r + 0.4) / h, (c + 0.5) / w
            for s, q in [(s, ratios[0]) for s in sizes] + [(sizes[0], q) for q in ratios[1:]]:
                hw, hh = s * h / w * np.sqrt(q) / 2, s / np.sqrt(q) / 2
                want.append([cx - hw, cy - hh, cx + hw, cy + hh])
    np.testing.assert_allclose(got, np.array(want)[None], rtol=1e-5, atol=1e-6)
    assert got.dtype == np.float32
    clipped = nd.contrib.MultiBoxPrior(nd.zeros((1, 2, h, w)), sizes=0.9, clip=True).asnumpy()
    assert clipped.min() >= 0 and clipped.max() <= 1
    with pytest.raises(GpundaError, match="float32"):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2), dtype="float64"))


def _ref_detection(prob, loc, anchors, threshold=0.01, nms=0.5, force=False, topk=-1,
                   var=(0.1, 0.1, 0.2, 0.2), clip=True):
    b_n, c_n, a_n = prob.shape
    out = np.full((b_n, a_n, 6), -1.0)
    for b in range(b_n):
        rows = []
        for i in range(a_n):
            cid = int(np.argmax(prob[b, 1:, i])) + 1
            score = prob[b, cid, i]
            if score < threshold:
                continue
            al, at, ar, ab = anchors[i]
            ax, ay, aw, ah = (al + ar) / 2, (at + ab) / 2, ar - al, ab - at
            px, py, pw, ph = loc[b, 4 * i:4 * i + 4]
            ox, oy = px * var[0] * aw + ax, py * var[1] * ah + ay
            ow, oh = np.exp(pw * var[2]) * aw / 2, np.exp(ph * var[3]) * ah / 2
            box = np.array([ox - ow, oy - oh, ox + ow, oy + oh])
            rows.append([cid - 1, score] + list(np.clip(box, 0, 1) if clip else box))
        order = sorted(range(len(rows)), key=lambda k: -rows[k][1])
        keep = len(rows) if topk <= 0 else min(topk, len(rows))
        det = [list(rows[k]) for k in order[:keep]] + [[-1] + r[1:] for r in rows[keep:]]
        for i in range(keep):
            if det[i][0] < 0:
                continue
            for j in range(i + 1, keep):
                if det[j][0] >= 0 and (force or det[i][0] == det[j][0]) and \
                        _iou(det[i][2:], det[j][2:], clamp_area=False) >= nms:
                    det[j][0] = -1
        if det:
            out[b, :len(det)] = det
    return out


@pytest.mark.parametrize("params", [dict(), dict(threshold=0.2, nms=0.3),
                                    dict(force=True, nms=0.1, topk=5, clip=False)])
def test_multibox_detection_matches_reference(params):
    rng = np.random.RandomState(6)
    prob = rng.rand(2, 4, 30)
    prob /= prob.sum(axis=1, keepdims=True)
    loc = rng.randn(2, 120) * 0.5
    anchors = _boxes(rng, 30)
    names = dict(threshold="threshold", nms="nms_threshold", force="force_suppress",
                 topk="nms_topk", clip="clip")
    got = nd.contrib.MultiBoxDetection(nd.array(prob), nd.array(loc), nd.array(anchors[None]),
                                       **{names[k]: v for k, v in params.items()})
    want = _ref_detection(prob.astype(np.float32), loc.astype(np.float32),
                          anchors.astype(np.float32), **params)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def _ref_target(anchors, label, overlap=0.5, var=(0.1, 0.1, 0.2, 0.2)):
    """MultiBoxTarget without negative mining (every unmatched anchor is negative)."""
    a_n = anchors.shape[0]
    loc, mask, cls = np.zeros((label.shape[0], a_n, 4)), np.zeros((label.shape[0], a_n, 4)), \
        np.full((label.shape[0], a_n), -1.0)
    for b, lab in enumerate(label):
        gts = [g for g in lab if g[0] != -1]
        if not gts:
            continue
        iou = np.array([[_iou(a, g[1:5]) if _iou(a, g[1:5]) == _iou(a, g[1:5]) else 0
                         for g in gts] for a in anchors])
        match = {}
        free_a, free_g = set(range(a_n)), set(range(len(gts)))
        while free_g:
            best = max(((iou[i, k], -i, -k) for i in free_a for k in free_g), default=None)
            if best is None or best[0] <= 1e-6:
                break
            i, k = -best[1], -best[2]
            match[i] = k
            free_a.discard(i)
            free_g.discard(k)
        for i in free_a:
            if overlap > 0 and iou[i].max() > overlap:
                match[i] = int(np.argmax(iou[i]))
        cls[b] = 0
        for i, k in match.items():
            g, a = gts[k][1:5], anchors[i]
            aw, ah = a[2] - a[0], a[3] - a[1]
            gw, gh = g[2] - g[0], g[3] - g[1]
            loc[b, i] = [((g[0] + g[2]) / 2 - (a[0] + a[2]) / 2) / aw / var[0],
                         ((g[1] + g[3]) / 2 - (a[1] + a[3]) / 2) / ah / var[1],
                         np.log(gw / aw) / var[2], np.log(gh / ah) / var[3]]
            mask[b, i] = 1
            cls[b, i] = gts[k][0] + 1
    return loc.reshape(len(label), -1), mask.reshape(len(label), -1), cls


def test_multibox_target_matches_reference():
    rng = np.random.RandomState(7)
    anchors = _boxes(rng, 40)
    label = np.full((3, 4, 5), -1.0)
    for b, n in enumerate((4, 2, 0)):
        label[b, :n, 0] = rng.randint(0, 3, n)
        label[b, :n, 1:] = _boxes(rng, n)
    cls_pred = rng.randn(3, 3, 40)
    for overlap in (0.5, 0.1, 0):
        got = nd.contrib.MultiBoxTarget(nd.array(anchors[None]), nd.array(label),
                                        nd.array(cls_pred), overlap_threshold=overlap)
        want = _ref_target(anchors.astype(np.float32), label.astype(np.float32), overlap)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-4, atol=1e-5)
    # hard negative mining keeps int(ratio * positives) negatives per batch
    got = nd.contrib.MultiBoxTarget(nd.array(anchors[None]), nd.array(label), nd.array(cls_pred),
                                    negative_mining_ratio=2, negative_mining_thresh=0.5)
    cls = got[2].asnumpy()
    for b in range(3):
        assert (cls[b] == 0).sum() == min(2 * (cls[b] > 0).sum(), 40 - (cls[b] > 0).sum())
    bad = label.copy()
    bad[0, 3] = [-1, 0.1, -1, -1, -1]
    with pytest.raises(GpundaError, match="padding row must be all -1"):
        nd.contrib.MultiBoxTarget(nd.array(anchors[None]), nd.array(bad), nd.array(cls_pred))


# ----------------------------------------------------------------------------
# Proposal, MultiProposal


def test_multi_proposal_is_proposal_per_image():
    rng = np.random.RandomState(8)
    b, a, h, w = 3, 6, 5, 6
    cls = rng.rand(b, 2 * a, h, w)
    bbox = rng.randn(b, 4 * a, h, w) * 0.2
    im = np.array([[80, 96, 1.0], [64, 70, 0.7], [75, 90, 1.2]])
    kw = dict(scales=(2, 4), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=60, rpn_post_nms_top_n=25,
              threshold=0.6, rpn_min_size=4, output_score=True)
    rois, scores = nd.contrib.MultiProposal(nd.array(cls), nd.array(bbox), nd.array(im), **kw)
    assert rois.shape == (b * 25, 5) and scores.shape == (b * 25, 1)
    for i in range(b):
        r, s = nd.contrib.Proposal(nd.array(cls[i:i + 1]), nd.array(bbox[i:i + 1]),
                                   nd.array(im[i:i + 1]), **kw)
        np.testing.assert_array_equal(rois.asnumpy()[25 * i:25 * i + 25, 1:], r.asnumpy()[:, 1:])
        np.testing.assert_array_equal(scores.asnumpy()[25 * i:25 * i + 25], s.asnumpy())
        assert (rois.asnumpy()[25 * i:25 * i + 25, 0] == i).all()
        # the kept boxes overlap each other at most by threshold (pixel IoU)
        kept = r.asnumpy()[:, 1:]
        for p in range(len(kept)):
            for q in range(p):
                if not np.array_equal(kept[p], kept[q]):
                    assert _iou(kept[p], kept[q], plus=1.0) <= 0.6 + 1e-6
    one = nd.contrib.Proposal(nd.array(cls[:1]), nd.array(bbox[:1]), nd.array(im[:1]),
                              scales=(2, 4), ratios=(0.5, 1, 2))
    assert isinstance(one, nd.NDArray) and one.shape == (300, 5)
    with pytest.raises(GpundaError, match="one image"):
        nd.contrib.Proposal(nd.array(cls), nd.array(bbox), nd.array(im), **kw)
    with pytest.raises(GpundaError, match="len\\(ratios\\)"):
        nd.contrib.Proposal(nd.array(cls[:1]), nd.array(bbox[:1]), nd.array(im[:1]))


def test_proposal_gradient_is_zero_and_ignores_the_head_size():
    """MXNet's test_multi_proposal_op passes a head gradient smaller than the output: the
    backward never reads it, so MXNet (and gpunda) accept it for such ops only."""
    cls = mx.sym.Variable("cls_prob")
    s = mx.sym.contrib.MultiProposal(cls, mx.sym.Variable("bbox_pred"),
                                     mx.sym.Variable("im_info"), scales=(2,), ratios=(1,),
                                     rpn_post_nms_top_n=4, rpn_min_size=1)
    shapes = dict(cls_prob=(2, 2, 3, 3), bbox_pred=(2, 4, 3, 3), im_info=(2, 3))
    ex = s.simple_bind(mx.cpu(), **shapes)
    ex.arg_dict["cls_prob"][:] = np.random.rand(*shapes["cls_prob"])
    ex.arg_dict["im_info"][:] = np.array([[40, 40, 1], [30, 45, 1]])
    ex.forward(is_train=True)
    ex.backward([nd.ones((4, 5))])
    for g in ex.grad_arrays:
        assert not g.asnumpy().any()
    # imperatively too; a rule that reads its head gradient still refuses a short one
    a, b = nd.array(np.random.rand(3, 4)), nd.array(np.random.rand(2, 4))
    a.attach_grad()
    with ag.record():
        iou = nd.contrib.box_iou(a, b)
    iou.backward(nd.ones((1,)))
    assert not a.grad.asnumpy().any()
    x = nd.ones((2, 3))
    x.attach_grad()
    with ag.record():
        y = x * 2
    with pytest.raises(GpundaError, match="head_grads"):
        y.backward(nd.ones((2,)))
    with pytest.raises(GpundaError, match="head_grads"):
        x.backward(nd.ones((2,)))


# ----------------------------------------------------------------------------
# RROIAlign


def _ref_rroi_align(data, rois, pooled, scale, ratio):
    n, c, h, w = data.shape
    out = np.zeros((len(rois), c) + pooled)
    for r, (bi, cx, cy, rw, rh, theta) in enumerate(rois):
        cx, cy = cx * scale, cy * scale
        rw, rh = max(rw * scale, 1.0), max(rh * scale, 1.0)
        th = theta * np.pi / 180
        gh = ratio if ratio > 0 else int(np.ceil(rh / pooled[0]))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pooled[1]))
        for ph in range(pooled[0]):
            for pw in range(pooled[1]):
                acc = np.zeros(c)
                for iy in range(gh):
                    yy = -rh / 2 + ph * rh / pooled[0] + (iy + 0.5) * rh / pooled[0] / gh
                    for ix in range(gw):
                        xx = -rw / 2 + pw * rw / pooled[1] + (ix + 0.5) * rw / pooled[1] / gw
                        x = xx * np.cos(th) + yy * np.sin(th) + cx
                        y = yy * np.cos(th) - xx * np.sin(th) + cy
                        if y < -1 or y > h or x < -1 or x > w:
                            continue
                        y, x = max(y, 0), max(x, 0)
                        y0, x0 = min(int(y), h - 1), min(int(x), w - 1)
                        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
                        ly = y - y0 if y0 < h - 1 else 0
                        lx = x - x0 if x0 < w - 1 else 0
                        img = data[int(bi)]
                        acc += ((1 - ly) * (1 - lx) * img[:, y0, x0] + (1 - ly) * lx * img[:, y0, x1]
                                + ly * (1 - lx) * img[:, y1, x0] + ly * lx * img[:, y1, x1])
                out[r, :, ph, pw] = acc / (gh * gw)
    return out


@pytest.mark.parametrize("pooled,scale,ratio", [((2, 3), 0.125, -1), ((3, 3), 0.25, 2)])
def test_rroi_align_matches_reference(pooled, scale, ratio):
    rng = np.random.RandomState(9)
    data = rng.rand(2, 3, 9, 11) * 10
    rois = np.concatenate([rng.randint(0, 2, (7, 1)), rng.uniform(-16, 96, (7, 2)),
                           rng.uniform(4, 80, (7, 2)), rng.uniform(-180, 180, (7, 1))], axis=1)
    got = nd.contrib.RROIAlign(nd.array(data, dtype="float64"), nd.array(rois, dtype="float64"),
                               pooled_size=pooled, spatial_scale=scale, sampling_ratio=ratio)
    np.testing.assert_allclose(got.asnumpy(), _ref_rroi_align(data, rois, pooled, scale, ratio),
                               rtol=1e-9, atol=1e-9)


def test_rroi_align_has_no_gradient_and_checks_params():
    data = nd.array(np.random.rand(1, 2, 4, 4))
    data.attach_grad()
    rois = nd.array([[0, 2, 2, 2, 2, 10]])
    with ag.record():
        out = nd.contrib.RROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(GpundaError, match="RROIAlign"):
        out.backward()
    with pytest.raises(GpundaError, match="spatial_scale"):
        nd.contrib.RROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=2.0)
    with pytest.raises(GpundaError, match="6"):
        nd.contrib.RROIAlign(data, rois[:, :5], pooled_size=(2, 2), spatial_scale=1.0)
