"""The blocked greedy NMS walk (ops/_detection_util.py: greedy_keep, block_keep) and
box_nms on many boxes (blocks, class segments, chains, ties), against a plain NumPy
greedy NMS written here: one kept box at a time, in priority order."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.ops.vision._detection_util import block_keep, greedy_keep

nd = mx.nd


def _seq_keep(sup):
    """The greedy walk over a suppression matrix, one box at a time."""
    alive = np.ones(sup.shape[0], dtype=bool)
    for i in range(sup.shape[0]):
        if alive[i]:
            alive[i + 1:] &= ~sup[i, i + 1:]
    return alive


def test_block_keep_is_the_sequential_walk():
    rng = np.random.default_rng(0)
    for b in (1, 2, 7, 64, 200):
        for density in (0.0, 0.02, 0.2, 0.9):
            sup = rng.random((b, b)) < density
            np.testing.assert_array_equal(block_keep(sup), _seq_keep(sup))
    # a chain, each box suppressing the next only: the longest fixed-point iteration
    chain = np.eye(150, k=1, dtype=bool)
    want = np.arange(150) % 2 == 0
    np.testing.assert_array_equal(block_keep(chain), want)
    # the lower triangle (and the diagonal) is never read
    np.testing.assert_array_equal(block_keep(chain | np.tri(150, dtype=bool)), want)


@pytest.mark.parametrize("limit", [None, 1, 37, 300])
def test_greedy_keep_over_blocks_windows_and_segments(limit):
    rng = np.random.default_rng(1)
    n = 700
    sup = rng.random((n, n)) < 0.01
    want = np.flatnonzero(_seq_keep(sup))
    if limit is not None:
        want = want[:limit]
    got = greedy_keep(np, n, lambda r, c: sup[np.ix_(r, c)], limit=limit, block=64)
    np.testing.assert_array_equal(got, want)
    if limit is None:
        # segments: runs of boxes that never suppress each other, small and large ones
        bounds = np.array([0, 3, 4, 40, 41, 42, 300, 310, n])
        seg = np.searchsorted(bounds, np.arange(n), side="right")
        same = seg[:, None] == seg[None, :]
        want = np.flatnonzero(_seq_keep(sup & same))
        got = greedy_keep(np, n, lambda r, c: sup[np.ix_(r, c)], block=64,
                          segment_end=bounds[seg])
        np.testing.assert_array_equal(got, want)
    else:
        with pytest.raises(ValueError, match="segments"):
            greedy_keep(np, n, None, limit=limit, segment_end=np.full(n, n))


# ----------------------------------------------------------------------------
# box_nms on many boxes


def _iou_row(box, others):
    """IoU of one corner box with many, in their dtype, as MXNet computes it (NaN 0/0)."""
    w = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0])
    h = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1])
    inter = np.maximum(w, 0) * np.maximum(h, 0)

    def area(b):
        bw, bh = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
        return np.where((bw < 0) | (bh < 0), 0, bw * bh)
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / (area(box) + area(others) - inter)


def _to_corner(b):
    return np.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2,
                     b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], axis=1)


def _ref_nms(x, thresh, valid=0.0, topk=-1, ci=-1, bg=-1, force=False, in_center=False,
             out_center=False):
    """(out, record) of box_nms for one batch x (n, 6) [id, score, 4 coords]."""
    n = x.shape[0]
    ok = x[:, 1] > valid
    if ci >= 0:
        ok &= x[:, ci] != bg
    cand = np.flatnonzero(ok)
    cand = cand[np.argsort(-x[cand, 1], kind="stable")]
    if topk >= 0:
        cand = cand[:topk]
    boxes = x[cand, 2:6]
    if in_center:
        boxes = _to_corner(boxes)
    cls = x[cand, ci].astype(np.int64) if ci >= 0 and not force else np.zeros(len(cand), int)
    alive = np.ones(len(cand), dtype=bool)
    kept = []
    for i in range(len(cand)):
        if not alive[i]:
            continue
        kept.append(cand[i])
        hit = (_iou_row(boxes[i], boxes[i + 1:]) > thresh) & (cls[i + 1:] == cls[i])
        alive[i + 1:] &= ~hit
    out = np.full_like(x, -1)
    record = np.full(n, -1.0)
    out[:len(kept)] = x[kept]
    record[:len(kept)] = kept
    if in_center != out_center:
        c = out[:len(kept), 2:6].copy()
        conv = _to_corner(c) if in_center else np.stack(
            [(c[:, 0] + c[:, 2]) / 2, (c[:, 1] + c[:, 3]) / 2, c[:, 2] - c[:, 0],
             c[:, 3] - c[:, 1]], axis=1)
        out[:len(kept), 2:6] = np.where(c[:, :1] < 0, c, conv)
    return out, record


def _many_boxes(rng, n, classes, ties):
    xy = rng.random((n, 2))
    wh = rng.uniform(0.05, 0.4, (n, 2))
    box = np.concatenate([xy, xy + wh], axis=1)
    box[1::5] = box[::5][:len(box[1::5])]                # duplicate boxes
    score = rng.random(n)
    if ties:
        score = np.round(score * 8) / 8                  # many equal scores
    ids = rng.integers(0, classes, n).astype(float)
    return np.concatenate([ids[:, None], score[:, None], box], axis=1)


def _nms_both(x, **kw):
    outs = [nd.zeros(x.shape, dtype="float64"), nd.zeros(x.shape[:-1] + (1,), dtype="float64")]
    nd.contrib.box_nms(nd.array(x, dtype="float64"), out=outs, **kw)
    return outs[0].asnumpy(), outs[1].asnumpy()[..., 0]


@pytest.mark.parametrize("classes,kw", [
    (1, dict(overlap_thresh=0.5)),
    (6, dict(overlap_thresh=0.5, id_index=0)),
    (6, dict(overlap_thresh=0.3, id_index=0, force_suppress=True, valid_thresh=0.2)),
    (6, dict(overlap_thresh=0.5, id_index=0, background_id=2, topk=500)),
    (300, dict(overlap_thresh=0.4, id_index=0)),                # small classes, many a block
    (4, dict(overlap_thresh=0.5, id_index=0, in_format="center", out_format="corner")),
    (4, dict(overlap_thresh=0.5, id_index=0, out_format="center")),
])
def test_box_nms_many_boxes_matches_numpy_greedy(classes, kw):
    rng = np.random.default_rng(classes + len(kw))
    names = dict(overlap_thresh="thresh", valid_thresh="valid", topk="topk", id_index="ci",
                 background_id="bg", force_suppress="force")
    ref_kw = {names[k]: v for k, v in kw.items() if k in names}
    ref_kw["in_center"] = kw.get("in_format") == "center"
    ref_kw["out_center"] = kw.get("out_format", kw.get("in_format")) == "center"
    for ties in (False, True):
        x = np.stack([_many_boxes(rng, 900, classes, ties) for _ in range(2)])
        out, record = _nms_both(x, **kw)
        for b in range(2):
            want, want_rec = _ref_nms(x[b], **ref_kw)
            np.testing.assert_array_equal(out[b], want)
            np.testing.assert_array_equal(record[b], np.where(want_rec >= 0, want_rec + b * 900,
                                                              -1))


def test_box_nms_chain_of_boxes_across_blocks():
    # each box overlaps the next one enough to be suppressed by it, not the one after:
    # greedy keeps every other box, a dependency as long as the whole chain
    n = 700
    x0 = np.arange(n) * 0.2
    box = np.stack([x0, np.zeros(n), x0 + 1, np.ones(n)], axis=1)
    data = np.concatenate([np.zeros((n, 1)), np.linspace(1, 0.5, n)[:, None], box], axis=1)
    out, record = _nms_both(data[None], overlap_thresh=0.5, id_index=0)
    want, want_rec = _ref_nms(data, 0.5, ci=0)
    assert (want_rec[:n // 2] == np.arange(0, n, 2)).all()
    np.testing.assert_array_equal(out[0], want)
    np.testing.assert_array_equal(record[0], want_rec)
