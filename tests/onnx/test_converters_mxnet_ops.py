"""Converters for the nine ops MXNet 1.9.1's exporter converts that gpunda's lacked
(argsort, Crop, box_nms, box_decode, ROIAlign, div_sqrt_dim, _split_v2,
_random_uniform_like, SequenceReverse): each one-op graph is exported, run in ONNX
Runtime and compared with gpunda's own forward of the same Symbol (the ops themselves are
checked against MXNet in tests/ops); then MXNet's ``convert_*`` name for each runs with
MXNet's arguments."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402
from _onnx_check import model_at  # noqa: E402

from gpunda.onnx._mxconv import NodeOutput  # noqa: E402
from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset12 as o12  # noqa: E402
from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset13 as o13  # noqa: E402

S = mx.sym
R = np.random.RandomState(28)


def _f(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


def _boxes(batch, n, classes=3):
    """Rows (class id, score, x1, y1, x2, y2) of heavily overlapping boxes; every fifth
    score is negative (invalid)."""
    d = np.zeros((batch, n, 6), np.float32)
    d[..., 0] = R.randint(0, classes, (batch, n))
    d[..., 1] = R.uniform(0, 1, (batch, n))
    xy = R.uniform(0, 5, (batch, n, 2))
    d[..., 2:4] = xy
    d[..., 4:6] = xy + R.uniform(1, 4, (batch, n, 2))
    d[:, ::5, 1] = -0.5
    return d


def _forward(sym, feed):
    return [o.asnumpy() for o in sym.eval(**{k: mx.nd.array(v, dtype=v.dtype)
                                             for k, v in feed.items()})]


def _export_run(sym, feed, path, opset=None, dyn=None, shapes=None):
    """Export (at ``shapes``, default the feed's) and run on ``feed``."""
    names = sym.list_inputs()
    kw = {} if opset is None else {"opset_version": opset}
    if dyn is not None:
        kw.update(dynamic=True, dynamic_input_shapes=[dyn[n] for n in names])
    shapes = shapes or {n: feed[n].shape for n in names}
    mx.onnx.export_model(sym, {}, [shapes[n] for n in names], [feed[n].dtype for n in names],
                         str(path), **kw)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {n: feed[n] for n in names})


def _check(got, want, exact=False):
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape and a.dtype == b.dtype, (k, a.shape, b.shape, a.dtype, b.dtype)
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")


x, y = S.var("data"), S.var("other")
ROIS = np.array([[0, 0, 0, 7, 7], [1, 2.5, 1, 6, 5.5], [-1, 0, 0, 3, 3],
                 [0, 1, 1, 1.5, 1.2], [1, -2, -1, 9, 10], [2, 0, 0, 4, 4]], np.float32)
NMS_DATA = _boxes(2, 20)

_NAMES = mx.name.NameManager()
_NAMES.__enter__()
CASES = [
    ("argsort", S.Group([S.argsort(x, axis=1), S.argsort(x, axis=0, is_ascend=False),
                         S.argsort(x, axis=None, dtype="int64"),
                         S.argsort(x, axis=-1, is_ascend=False, dtype="int32")]),
     {"data": _f(3, 5)}, True),
    ("crop", S.Group([S.Crop(x, h_w=(2, 3), offset=(1, 2), num_args=1),
                      S.Crop(x, h_w=(5, 6), num_args=1),
                      S.Crop(x, y, offset=(2, 1), num_args=2),
                      S.Crop(x, y, center_crop=True, num_args=2)]),
     {"data": _f(2, 3, 5, 6), "other": _f(1, 1, 3, 4)}, True),
    ("sequence_reverse", S.Group([S.SequenceReverse(x),
                                  S.SequenceReverse(x, y, use_sequence_length=True)]),
     {"data": _f(5, 4, 2), "other": np.array([2, 5, 0, 1], np.float32)}, True),
    ("split_v2", S.Group(list(S.split_v2(x, (2, 3), axis=1))
                         + list(S.split_v2(x, 3, axis=0, squeeze_axis=True))
                         + list(S.split_v2(x, 2, axis=-1))
                         + list(S._internal._split_v2(x, indices=(1, 2, 4), axis=1))),
     {"data": _f(3, 5, 4)}, True),
    ("div_sqrt_dim", S.contrib.div_sqrt_dim(x), {"data": _f(2, 3, 7)}, False),
    ("box_decode", S.Group([
        S.contrib.box_decode(x, y, std0=0.1, std1=0.2, std2=0.3, std3=0.4, clip=0.5),
        S.contrib.box_decode(x, y, format="center")]),
     {"data": _f(2, 4, 4), "other": _f(1, 4, 4, lo=0, hi=1) + np.array([0, 0, 1, 1],
                                                                        np.float32)},
     False),
    ("roi_align", S.Group([S.contrib.ROIAlign(x, y, pooled_size=(2, 3), spatial_scale=0.5),
                           S.contrib.ROIAlign(x, y, pooled_size=(3, 3), spatial_scale=1.0,
                                              sample_ratio=2)]),
     {"data": _f(2, 3, 8, 8), "other": ROIS}, False),
    ("roi_align_no_batch_index", S.contrib.ROIAlign(x, y, pooled_size=(2, 2),
                                                    spatial_scale=1.0),
     {"data": _f(1, 2, 6, 6), "other": ROIS[:, 1:]}, False),
    ("box_nms", S.Group([
        S.contrib.box_nms(x, overlap_thresh=0.3),
        S.contrib.box_nms(x, overlap_thresh=0.5, topk=6, valid_thresh=0.2),
        S.contrib.box_nms(x, id_index=0, overlap_thresh=0.3),
        S.contrib.box_nms(x, id_index=0, force_suppress=True, background_id=1),
        S.contrib.box_nms(x, in_format="center", out_format="corner"),
        S.contrib.box_nms(x, out_format="center", overlap_thresh=0.4),
        S.contrib.box_nms(x, topk=0)]),
     {"data": NMS_DATA}, True),
    ("box_nms_4d_columns", S.contrib.box_nms(x, coord_start=1, score_index=0, id_index=5,
                                             overlap_thresh=0.4),
     {"data": _boxes(6, 12)[..., [1, 2, 3, 4, 5, 0]].reshape(2, 3, 12, 6).copy()}, True),
]
_NAMES.__exit__(None, None, None)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_export_matches_forward(case, tmp_path):
    _, sym, feed, exact = case
    _check(_export_run(sym, feed, tmp_path / "m.onnx"), _forward(sym, feed), exact)


def test_box_nms_inputs_are_not_trivial():
    # the NMS case suppresses boxes, drops invalid ones, and classes change the answer
    outs = _forward(CASES[-2][1], {"data": NMS_DATA})
    kept = [(o[..., 1] != -1).sum(axis=1) for o in outs[:3]]
    assert all(((k > 1) & (k < 16)).all() for k in kept)     # 16 valid boxes per batch
    assert (kept[2] > kept[0]).all() and (kept[1] <= 6).all()


@pytest.mark.parametrize("opset", [13, 16, 21])
def test_roi_align_opsets(opset, tmp_path):
    sym = S.contrib.ROIAlign(x, y, pooled_size=(2, 3), spatial_scale=0.5)
    if opset >= 16:     # Detectron2's half-pixel boxes: ONNX's half_pixel mode
        sym = S.Group([sym, S.contrib.ROIAlign(x, y, pooled_size=(2, 2), spatial_scale=0.7,
                                               aligned=True)])
    feed = {"data": _f(2, 3, 8, 8), "other": ROIS}
    want = _forward(sym, feed)
    assert not want[0][2].any() and not want[0][5].any()     # batch index -1 and 2: zeros
    _check(_export_run(sym, feed, tmp_path / "m.onnx", opset=opset), want)


def test_dynamic_dims(tmp_path):
    # exported at one size, run at another
    cases = [
        (S.Group([S.argsort(x, axis=0), S.argsort(x, axis=None)]), {"data": (3, 5)},
         {"data": (None, 5)}, {"data": _f(6, 5)}),
        (S.Group(list(S.split_v2(x, (2, 3), axis=0)) + list(S.split_v2(x, 2, axis=0))),
         {"data": (4, 5)}, {"data": (None, 5)}, {"data": _f(8, 5)}),
        (S.SequenceReverse(x), {"data": (4, 3)}, {"data": (None, None)}, {"data": _f(6, 2)}),
        (S.contrib.div_sqrt_dim(x), {"data": (4, 3)}, {"data": (4, None)},
         {"data": _f(4, 9)}),
        (S.contrib.box_nms(x, overlap_thresh=0.3, topk=5, id_index=0), {"data": (1, 4, 6)},
         {"data": (None, None, 6)}, {"data": _boxes(3, 10)}),
        (S.contrib.ROIAlign(x, y, pooled_size=(2, 2), spatial_scale=1.0),
         {"data": (1, 2, 6, 6), "other": (2, 5)},
         {"data": (None, 2, 6, 6), "other": (None, 5)},
         {"data": _f(3, 2, 6, 6), "other": ROIS[:5]}),
        (S.Crop(x, y, offset=(1, 1), num_args=2), {"data": (1, 2, 6, 6), "other": (1, 1, 3, 3)},
         {"data": (None, 2, 6, 6), "other": (None, 1, None, None)},
         {"data": _f(2, 2, 6, 6), "other": _f(2, 1, 4, 2)}),
    ]
    for k, (sym, shapes, dyn, feed) in enumerate(cases):
        got = _export_run(sym, feed, tmp_path / f"d{k}.onnx", dyn=dyn, shapes=shapes)
        _check(got, _forward(sym, feed))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_uniform_like(dtype, tmp_path):
    sym = S.random.uniform_like(x, low=-2.0, high=3.0)
    feed = {"data": np.zeros((40, 50), dtype)}
    (got,) = _export_run(sym, feed, tmp_path / "m.onnx")
    (want,) = _forward(sym, feed)
    assert got.shape == want.shape == (40, 50) and got.dtype == want.dtype == dtype
    assert got.min() >= -2.0 and got.max() < 3.0
    assert got.min() < -1.5 and got.max() > 2.5 and abs(got.mean() - 0.5) < 0.1
    assert len(np.unique(got)) > 1000


def test_unsupported_parameters_raise(tmp_path):
    p = str(tmp_path / "m.onnx")
    rois = {"data": (1, 4, 6, 6), "other": (2, 5)}
    with pytest.raises(GpundaError, match=r"node 'psalign'.*position_sensitive=True"):
        mx.onnx.export_model(S.contrib.ROIAlign(x, y, pooled_size=(2, 2), spatial_scale=1.0,
                                                position_sensitive=True, name="psalign"),
                             {}, list(rois.values()), np.float32, p)
    with pytest.raises(GpundaError, match=r"node 'al'.*aligned=True at opset 15"):
        mx.onnx.export_model(S.contrib.ROIAlign(x, y, pooled_size=(2, 2), spatial_scale=1.0,
                                                aligned=True, name="al"),
                             {}, list(rois.values()), np.float32, p, opset_version=15)
    with pytest.raises(GpundaError, match=r"node 'cc'.*center_crop=True with a dynamic"):
        mx.onnx.export_model(S.Crop(x, y, center_crop=True, num_args=2, name="cc"), {},
                             [(1, 2, 6, 6), (1, 1, 3, 3)], np.float32, p, dynamic=True,
                             dynamic_input_shapes=[(1, 2, 6, 6), (1, 1, None, None)])


def test_operator_support_lists_them():
    ops = mx.onnx.get_operator_support()
    for op in ("argsort", "Crop", "_contrib_box_nms", "_contrib_box_decode",
               "_contrib_ROIAlign", "_contrib_div_sqrt_dim", "_split_v2",
               "_random_uniform_like", "SequenceReverse"):
        assert op in ops, op


# -- MXNet's convert_* names -----------------------------------------------------------
def _mxnet_call(fn, op, attrs, feed, opset=13):
    """``fn(node, **kwargs)`` as MXNet's exporter calls it for a one-op graph over graph
    inputs ``feed``; the returned nodes run in ONNX Runtime. Returns the outputs."""
    names = list(feed)
    node = {"op": op, "name": "n", "attrs": {k: str(v) for k, v in attrs.items()},
            "inputs": [[k, 0, 0] for k in range(len(names))]}
    proc = [helper.make_tensor_value_info(nm, helper.np_dtype_to_tensor_dtype(v.dtype),
                                          v.shape) for nm, v in feed.items()]
    init = []
    lookup = [[NodeOutput(nm, v.dtype)] for nm, v in feed.items()]
    ret = fn(node, initializer=init, outputs_lookup=lookup, weights={}, proc_nodes=proc,
             idx=len(names), opset_version=opset)
    nodes, dtypes = ret if isinstance(ret, tuple) else (ret, None)
    produced = [o for nd in nodes for o in nd.output]
    outs = ["n"] if "n" in produced else sorted((o for o in produced
                                                if o[1:].isdigit() and o[0] == "n"),
                                               key=lambda s: int(s[1:]))
    assert outs, produced
    dtypes = dtypes or [next(iter(feed.values())).dtype] * len(outs)
    graph = helper.make_graph(nodes, "g", proc, [
        helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(np.dtype(t)), None)
        for o, t in zip(outs, dtypes)], initializer=init)
    model = model_at(graph, opset)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


MX_CASES = [
    (o12.convert_argsort, "argsort", {"axis": 0, "is_ascend": False}, {"a": _f(4, 3)}),
    (o12.convert_crop, "Crop", {"num_args": 2, "offset": (1, 2)},
     {"a": _f(1, 2, 6, 7), "b": _f(1, 1, 3, 4)}),
    (o12.convert_contrib_box_nms, "_contrib_box_nms", {"overlap_thresh": 0.3, "topk": 8},
     {"a": NMS_DATA}),
    (o13.convert_contrib_box_nms, "_contrib_box_nms", {"id_index": 0, "overlap_thresh": 0.3},
     {"a": NMS_DATA}),
    (o12.convert_contrib_box_decode, "_contrib_box_decode", {"std2": 0.5, "clip": 1.0},
     {"a": _f(1, 3, 4), "b": _f(1, 3, 4, lo=0, hi=1) + np.array([0, 0, 1, 1], np.float32)}),
    (o12.convert_contrib_roialign, "_contrib_ROIAlign",
     {"pooled_size": (2, 2), "spatial_scale": 0.5}, {"a": _f(2, 3, 8, 8), "b": ROIS}),
    (o13.convert_contrib_roialign, "_contrib_ROIAlign",
     {"pooled_size": (3, 2), "spatial_scale": 1.0, "sample_ratio": 2},
     {"a": _f(2, 3, 8, 8), "b": ROIS}),
    (o12.convert_contrib_div_sqrt_dim, "_contrib_div_sqrt_dim", {}, {"a": _f(3, 16)}),
    (o12.convert_contrib_split_v2, "_split_v2", {"sections": 2, "indices": (), "axis": 1},
     {"a": _f(3, 4)}),
    (o13.convert_contrib_split_v2, "_split_v2", {"indices": (0, 1, 3), "axis": 1,
                                                 "squeeze_axis": False}, {"a": _f(3, 5)}),
    (o12.convert_sequence_reverse, "SequenceReverse", {"use_sequence_length": True},
     {"a": _f(4, 3, 2), "b": np.array([1, 4, 3], np.float32)}),
]


@pytest.mark.parametrize("case", MX_CASES, ids=[f"{c[0].__module__[-7:]}.{c[0].__name__}"
                                                for c in MX_CASES])
def test_mxnet_convert_names(case):
    fn, op, attrs, feed = case
    got = _mxnet_call(fn, op, attrs, feed)
    sym = getattr(S, op)(*[S.var(nm) for nm in feed], **attrs) if hasattr(S, op) else \
        getattr(S._internal, op)(*[S.var(nm) for nm in feed], **attrs)
    if len(sym.list_outputs()) > 1:
        sym = S.Group(list(sym))
    _check(got, _forward(sym, feed), exact=op in ("argsort", "Crop", "_split_v2",
                                                  "SequenceReverse", "_contrib_box_nms"))


def test_mxnet_convert_random_uniform_like():
    (got,) = _mxnet_call(o12.convert_random_uniform_like, "_random_uniform_like",
                         {"low": 1.0, "high": 2.0}, {"a": np.zeros((30, 30), np.float32)})
    assert got.shape == (30, 30) and got.dtype == np.float32
    # 900 draws from U[1, 2): every one in range, nearly all distinct, mean and spread of
    # the distribution (1.5 and 1/sqrt(12); 10 standard errors of slack)
    assert got.min() >= 1.0, got.min()
    assert got.max() < 2.0, got.max()
    assert len(np.unique(got)) > 500, len(np.unique(got))
    assert abs(float(got.mean()) - 1.5) < 0.1, got.mean()
    assert abs(float(got.std()) - 12 ** -0.5) < 0.05, got.std()


def test_every_op_of_mxnets_tables_converts():
    # the ops MXNet 1.9.1 registers converters for, at opsets 12 and 13: none is a stub
    from gpunda.onnx.mx2onnx._export_onnx import MXNetGraph
    from gpunda.onnx._registry import converter_for
    from gpunda.ops.registry import get_op
    ops = set(MXNetGraph.registry_[12]) | set(MXNetGraph.registry_[13])
    ops.discard("null")
    assert len(ops) == 148
    missing = sorted(op for op in ops if converter_for(get_op(op)) is None)
    assert missing == []
