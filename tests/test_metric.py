"""mx.metric against MXNet 1.9.1.

The expected numbers (``MXNET``) came from running the same updates on the same
inputs with real MXNet 1.9.1 (``mxnet.metric``); each entry is
[get() after the updates, get_global() after them, get_global() after reset_local()].
"""
import math

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd

# from MXNet 1.9.1
MXNET = {
    "acc": [0.36363636363636365] * 3,
    "top2": [0.7272727272727273] * 3,
    "f1_macro": [0.75] * 3,
    "f1_micro": [0.75] * 3,
    "mcc_macro": [0.47360679774997894] * 3,
    "mcc_micro": [0.4472135954999579] * 3,
    "perp_none": [2.9714724932396783] * 3,
    "perp_ign": [3.613936177496325] * 3,
    "mae": [0.9998792111873627] * 3,
    "mse": [1.6259067058563232] * 3,
    "rmse": [1.2745426297187805] * 3,
    "ce": [1.0890577056191184] * 3,
    "nll": [1.0890577056191184] * 3,
    "pearson_macro": [0.7691801329371685] * 3,
    # MXNet's micro average keeps no global sums: get_global() is 0.0
    "pearson_micro": [0.792698821294542, 0.0, 0.0],
    "pcc": [0.4235587248015105] * 3,
    "loss": [0.5735923882686731] * 3,
    "torch": [0.554607073465983] * 3,
    "caffe": [0.5963747660319011] * 3,
    "custom": [0.7272727272727273] * 3,
    "np": [0.35] * 3,
    "composite": [[0.36363636363636365, 1.0890577056191184, 0.7272727272727273]] * 3,
}


def A(x):
    return nd.array(np.asarray(x, dtype=np.float32))


def _data():
    rng = np.random.RandomState(0)
    d = {}
    d["p1"] = rng.rand(6, 3).astype(np.float32)
    d["l1"] = np.array([0, 2, 1, 1, 0, 2])
    d["p2"] = rng.rand(5, 3).astype(np.float32)
    d["l2"] = np.array([2, 2, 0, 1, 0])
    d["bp1"] = rng.rand(8, 2).astype(np.float32)
    d["bl1"] = np.array([0, 1, 1, 0, 1, 1, 0, 0])
    d["bp2"] = rng.rand(6, 2).astype(np.float32)
    d["bl2"] = np.array([1, 1, 0, 0, 1, 0])
    d["sm1"] = d["p1"] / d["p1"].sum(1, keepdims=True)
    d["sm2"] = d["p2"] / d["p2"].sum(1, keepdims=True)
    d["r1"] = rng.randn(7).astype(np.float32)
    d["y1"] = rng.randn(7).astype(np.float32)
    d["r2"] = rng.randn(4, 2).astype(np.float32)
    d["y2"] = rng.randn(4, 2).astype(np.float32)
    d["y3"] = rng.randn(6).astype(np.float32)
    d["r3"] = (d["y3"] + rng.randn(6)).astype(np.float32)
    d["y4"] = rng.randn(5).astype(np.float32)
    d["r4"] = (0.5 * d["y4"] + rng.randn(5)).astype(np.float32)
    return d


def _feval(label, pred):
    return float(np.abs(label - pred.argmax(1)).sum()), label.size


def _cases(d):
    cls = [(d["l1"], d["p1"]), (d["l2"], d["p2"])]
    binary = [(d["bl1"], d["bp1"]), (d["bl2"], d["bp2"])]
    probs = [(d["l1"], d["sm1"]), (d["l2"], d["sm2"])]
    reg = [(d["y1"], d["r1"]), (d["y2"], d["r2"])]
    corr = [(d["y3"], d["r3"]), (d["y4"], d["r4"])]
    m = mx.metric
    return {
        "acc": (m.Accuracy(), cls), "top2": (m.TopKAccuracy(top_k=2), cls),
        "f1_macro": (m.F1(), binary), "f1_micro": (m.F1(average="micro"), binary),
        "mcc_macro": (m.MCC(), binary), "mcc_micro": (m.MCC(average="micro"), binary),
        "perp_none": (m.Perplexity(ignore_label=None), probs),
        "perp_ign": (m.Perplexity(ignore_label=2), probs),
        "mae": (m.MAE(), reg), "mse": (m.MSE(), reg), "rmse": (m.RMSE(), reg),
        "ce": (m.CrossEntropy(), probs), "nll": (m.NegativeLogLikelihood(), probs),
        "pearson_macro": (m.PearsonCorrelation(), corr),
        "pearson_micro": (m.PearsonCorrelation(average="micro"), corr),
        "pcc": (m.PCC(), [cls[0], (np.array([3, 2, 0, 1, 0]), np.array([3, 3, 0, 1, 2]))]),
        "loss": (m.Loss(), cls), "torch": (m.Torch(), cls[:1]), "caffe": (m.Caffe(), cls[1:]),
        "custom": (m.create(_feval), cls),
        "np": (m.np(lambda l, p: float((l == p.argmax(1)).mean())), cls),
        "composite": (m.create(["acc", "ce", m.TopKAccuracy(top_k=2)]), probs),
    }


@pytest.mark.parametrize("name", sorted(MXNET))
def test_metric_values_match_mxnet(name):
    metric, batches = _cases(_data())[name]
    for label, pred in batches:
        metric.update([A(label)], [A(pred)])
    got = [metric.get()[1], metric.get_global()[1]]
    metric.reset_local()
    got.append(metric.get_global()[1])
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(MXNET[name], dtype=np.float64), rtol=1e-5)


def test_names_aliases_and_configs_match_mxnet():
    names = [mx.metric.create(n).get()[0] for n in
             ("acc", "ce", "nll_loss", "pearsonr", "composite", "mae", "f1", "mcc", "pcc",
              "loss", "torch", "caffe")]
    names += [mx.metric.create("top_k_acc", top_k=3).name, mx.metric.create(_feval).name,
              mx.metric.create(lambda a, b: 0).name]
    # from MXNet 1.9.1
    assert names == ["accuracy", "cross-entropy", "nll-loss", "pearsonr", [], "mae", "f1", "mcc",
                     "pcc", "loss", "torch", "caffe", "top_k_accuracy_3", "_feval",
                     "custom(<lambda>)"]
    assert mx.metric.create('["top_k_accuracy", {"top_k": 3}]').get_config() == {
        "label_names": None, "metric": "TopKAccuracy", "name": "top_k_accuracy_3",
        "output_names": None, "top_k": 3}
    assert mx.metric.create({"metric": "acc", "axis": 0}).get_config() == {
        "axis": 0, "label_names": None, "metric": "Accuracy", "name": "accuracy",
        "output_names": None}
    comp = mx.metric.create(["acc", "ce"])
    assert [c["metric"] for c in comp.get_config()["metrics"]] == ["Accuracy", "CrossEntropy"]
    acc = mx.metric.Accuracy()
    assert mx.metric.create(acc) is acc
    assert isinstance(mx.metric.create(mx.metric.MSE), mx.metric.MSE)
    with pytest.raises(NotImplementedError):
        mx.metric.create(_feval).get_config()


def test_name_value_and_str_match_mxnet():
    d = _data()
    m = mx.metric.Accuracy()
    m.update([A(d["l1"])], [A(d["p1"])])
    # from MXNet 1.9.1
    assert m.get_name_value() == [("accuracy", 0.5)]
    assert m.get_global_name_value() == [("accuracy", 0.5)]
    assert str(m) == "EvalMetric: {'accuracy': 0.5}"


def test_reset_local_keeps_the_global_accumulation():
    m = mx.metric.MSE()
    m.update([A([1.0, 2.0])], [A([1.0, 4.0])])      # 2.0
    m.reset_local()
    m.update(A([0.0, 0.0]), A([1.0, 1.0]))          # 1.0; single arrays are wrapped
    assert m.get() == ("mse", 1.0)
    assert m.get_global() == ("mse", 1.5)
    m.reset()
    assert math.isnan(m.get()[1]) and math.isnan(m.get_global()[1])
    comp = mx.metric.CompositeEvalMetric(["acc", "mae"])
    comp.update([A([1, 0])], [A([[0, 1], [1, 0]])])
    comp.reset_local()
    comp.update([A([1, 0])], [A([[1, 0], [1, 0]])])
    names, local = comp.get()
    assert names == ["accuracy", "mae"] and local[0] == 0.5
    assert comp.get_global()[1][0] == 0.75
    assert comp.get_metric(1).name == "mae"
    with pytest.raises(ValueError, match="out of range"):
        comp.get_metric(5)


def test_perplexity_class_axis_and_ignore_label_against_numpy():
    rng = np.random.RandomState(3)
    probs = rng.dirichlet(np.ones(4), size=6).astype(np.float32)      # (6, 4)
    label = np.array([0, 3, 1, 1, 2, 3])
    m = mx.metric.Perplexity(ignore_label=None, axis=0)
    m.update([A(label)], [A(probs.T)])                                 # classes on axis 0
    ref = math.exp(-np.log(probs[np.arange(6), label]).mean())
    assert m.get()[1] == pytest.approx(ref, rel=1e-5)
    m = mx.metric.Perplexity(ignore_label=3)
    m.update([A(label)], [A(probs)])
    keep = label != 3
    ref = math.exp(-np.log(probs[np.arange(6), label][keep]).mean())
    assert m.get()[1] == pytest.approx(ref, rel=1e-5)


def test_update_dict_selects_by_names():
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": A([1, 1]), "other": A([0, 0])},
                  {"out": A([1, 0]), "x": A([1, 1])})
    assert m.get()[1] == 0.5


def test_bad_input_raises():
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.Accuracy().update([A([1]), A([0])], [A([1])])
    with pytest.raises(ValueError, match="binary"):
        mx.metric.F1().update([A([0, 1, 2])], [A(np.eye(3)[:, :2])])
    with pytest.raises(GpundaError, match="top_k"):
        mx.metric.TopKAccuracy(top_k=1)
    with pytest.raises(AssertionError):       # what MXNet raises (an assert)
        mx.metric.create("no-such-metric")
    with pytest.raises(GpundaError, match="unknown metric"):
        mx.metric.create("no-such-metric")
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.PearsonCorrelation().update([A([1, 2, 3])], [A([[1, 2, 3]])])


def test_register_and_alias_make_a_metric_creatable():
    @mx.metric.register
    @mx.metric.alias("always_one_alias")
    class AlwaysOne(mx.metric.EvalMetric):
        def __init__(self, name="always-one"):
            super().__init__(name)

        def update(self, labels, preds):
            self._add(1.0, 1)

    for key in ("alwaysone", "always_one_alias", "ALWAYS_ONE_ALIAS"):
        m = mx.metric.create(key)
        assert isinstance(m, AlwaysOne)
    assert "alwaysone" in mx.registry.get_registry(mx.metric.EvalMetric)
    with pytest.raises(GpundaError, match="not a subclass"):
        mx.metric.register(int)


def test_check_label_shapes():
    a, b = mx.metric.check_label_shapes(A([1, 2]), A([3, 4]), wrap=True)
    assert isinstance(a, list) and isinstance(b, list)
    mx.metric.check_label_shapes(A([[1, 2]]), A([[3, 4]]), shape=True)
    with pytest.raises(ValueError):
        mx.metric.check_label_shapes(A([[1, 2]]), A([[3], [4]]), shape=True)


# -- _BinaryClassificationMetrics (the counts behind F1 and MCC); numbers from MXNet 1.9.1 --
_BIN_A = ([0, 1, 1, 0, 1, 1], [[0.3, 0.7], [0.6, 0.4], [0.2, 0.8], [0.9, 0.1], [0.1, 0.9],
                               [0.55, 0.45]])
_BIN_B = ([1, 0, 0, 1], [[0.4, 0.6], [0.3, 0.7], [0.8, 0.2], [0.7, 0.3]])
_BIN_C = ([1, 1, 0, 0, 1, 0, 1], [[0.2, 0.8], [0.1, 0.9], [0.4, 0.6], [0.7, 0.3], [0.3, 0.7],
                                  [0.6, 0.4], [0.8, 0.2]])


def _bin(pair):
    return mx.nd.array(pair[0]), mx.nd.array(pair[1])


def test_binary_classification_metrics_counts_and_scores_match_mxnet():
    b = mx.metric._BinaryClassificationMetrics()
    b.update_binary_stats(*_bin(_BIN_A))
    assert (b.true_positives, b.false_positives, b.false_negatives, b.true_negatives) == \
        (2, 1, 2, 1)
    assert b.total_examples == 6
    assert (b.precision, b.recall) == pytest.approx((0.6666666666666666, 0.5))
    assert b.fscore == pytest.approx(0.5714285714285715)
    assert b.matthewscc() == 0.0
    b.update_binary_stats(*_bin(_BIN_B))
    b.local_reset_stats()
    b.update_binary_stats(*_bin(_BIN_B))
    assert (b.true_positives, b.false_positives, b.false_negatives, b.true_negatives) == \
        (1, 1, 1, 1)
    assert (b.global_true_positives, b.global_false_positives, b.global_false_negatives,
            b.global_true_negatives, b.global_total_examples) == (4, 3, 4, 3, 14)
    assert (b.global_precision, b.global_recall, b.global_fscore) == \
        pytest.approx((0.5714285714285714, 0.5, 0.5333333333333333))
    b.reset_stats()
    assert (b.global_total_examples, b.fscore, b.matthewscc(True)) == (0, 0.0, 0.0)
    c = mx.metric._BinaryClassificationMetrics()
    c.update_binary_stats(*_bin(_BIN_C))
    assert (c.true_positives, c.false_positives, c.false_negatives, c.true_negatives) == \
        (3, 1, 1, 2)
    assert (c.matthewscc(), c.fscore) == pytest.approx((0.4166666666666667, 0.75))
    c.update_binary_stats(*_bin(_BIN_B))
    assert c.matthewscc() == pytest.approx(0.26666666666666666)
    assert c.matthewscc(use_global=True) == pytest.approx(0.26666666666666666)
    with pytest.raises(ValueError, match="only supports binary classification"):
        c.update_binary_stats(mx.nd.array([0, 1, 2]), mx.nd.array([[1, 0], [0, 1], [1, 0]]))


@pytest.mark.parametrize("avg,f1_vals,mcc_vals", [
    ("macro", (0.5357142857142858, 0.5357142857142858, 0.5, 0.5238095238095238),
     (0.20833333333333334, 0.20833333333333334)),
    ("micro", (0.5454545454545454, 0.5454545454545454, 0.5, 0.5333333333333333),
     (0.26666666666666666, 0.26666666666666666)),
])
def test_f1_and_mcc_keep_their_counts_in_binary_classification_metrics(avg, f1_vals, mcc_vals):
    f1 = mx.metric.F1(average=avg)
    mcc = mx.metric.MCC(average=avg)
    # MXNet's attribute names: F1.metrics, MCC._metrics
    assert isinstance(f1.metrics, mx.metric._BinaryClassificationMetrics)
    assert isinstance(mcc._metrics, mx.metric._BinaryClassificationMetrics)
    f1.update(*[[a] for a in _bin(_BIN_A)])
    f1.update(*[[a] for a in _bin(_BIN_B)])
    assert (f1.get()[1], f1.get_global()[1]) == pytest.approx(f1_vals[:2])
    f1.reset_local()
    f1.update(*[[a] for a in _bin(_BIN_B)])
    assert (f1.get()[1], f1.get_global()[1]) == pytest.approx(f1_vals[2:])
    mcc.update(*[[a] for a in _bin(_BIN_C)])
    mcc.update(*[[a] for a in _bin(_BIN_B)])
    assert (mcc.get()[1], mcc.get_global()[1]) == pytest.approx(mcc_vals)
