"""gluon.contrib.estimator: a small MLP fit on generated data with each handler.

The expected logs, metric values, checkpoint file names and stopping epochs came from
running the same fits with real MXNet 1.9.1 (same data, same constant initialisation).
Timings in the logs are replaced by "T".
"""
import io
import logging
import math
import os
import re
import warnings

import numpy as np
import pytest

import gpunda as mx
from gpunda import gluon
from gpunda.gluon.contrib.estimator import (BatchBegin, BatchEnd, BatchProcessor,
                                            CheckpointHandler, EarlyStoppingHandler, EpochBegin,
                                            EpochEnd, Estimator, GradientUpdateHandler,
                                            LoggingHandler, MetricHandler, StoppingHandler,
                                            TrainBegin, TrainEnd, ValidationHandler)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_RNG = np.random.RandomState(0)
X = _RNG.randn(40, 4).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.float32)


def _loader(batch_size=8):
    data = gluon.data.ArrayDataset(mx.nd.array(X), mx.nd.array(Y))
    return gluon.data.DataLoader(data, batch_size=batch_size)


def _net():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(2))
    net.initialize(mx.init.Constant(0.05))
    net[0].weight.set_data(mx.nd.array(np.linspace(-1, 1, 32).reshape(8, 4)))
    return net


def _estimator(net=None, **kwargs):
    net = net or _net()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)
    buf = io.StringIO()
    est.logger.handlers = [logging.StreamHandler(buf)]
    return est, buf


def _lines(buf):
    return re.sub(r"\d+\.\d+s|\d+s ", "T", buf.getvalue()).splitlines()


def test_default_handlers_their_order_and_metric_names_match_mxnet():
    est, _ = _estimator()
    est.max_epoch, est.max_batch = 2, None
    handlers = est._prepare_default_handlers(
        _loader(), [EarlyStoppingHandler(est.train_metrics[0], mode="max")])
    # from MXNet 1.9.1
    assert [(type(h).__name__, str(getattr(h, "priority", None))) for h in handlers] == [
        ("GradientUpdateHandler", "-2000"), ("MetricHandler", "-1000"),
        ("ValidationHandler", "-1000"), ("EarlyStoppingHandler", "None"),
        ("StoppingHandler", "None"), ("LoggingHandler", "inf")]
    assert [m.name for m in est.train_metrics + est.val_metrics] == [
        "training accuracy", "training softmaxcrossentropyloss", "validation accuracy",
        "validation softmaxcrossentropyloss"]


# from MXNet 1.9.1
_LOG_INTERVAL_2 = [
    "Training begin: using optimizer SGD with current learning rate 0.5000 ",
    "Train for 2 epochs.",
    "[Epoch 0] Begin, current learning rate: 0.5000",
    "[Epoch 0][Batch 0][Samples 8] time/interval: T training accuracy: 0.1250, "
    "training softmaxcrossentropyloss: 0.6931",
    "[Epoch 0][Batch 2][Samples 24] time/interval: T training accuracy: 0.5417, "
    "training softmaxcrossentropyloss: 0.5660",
    "[Epoch 0][Batch 4][Samples 40] time/interval: T training accuracy: 0.6000, "
    "training softmaxcrossentropyloss: 0.5689",
    "Validation Begin",
    "[Epoch 0] Finished in T, validation accuracy: 0.8250, "
    "validation softmaxcrossentropyloss: 0.3207",
    "[Epoch 0] Finished in T, training accuracy: 0.6000, training softmaxcrossentropyloss: 0.5689",
    "[Epoch 1] Begin, current learning rate: 0.5000",
    "[Epoch 1][Batch 0][Samples 48] time/interval: T training accuracy: 1.0000, "
    "training softmaxcrossentropyloss: 0.1529",
    "[Epoch 1][Batch 2][Samples 64] time/interval: T training accuracy: 0.8750, "
    "training softmaxcrossentropyloss: 0.2307",
    "[Epoch 1][Batch 4][Samples 80] time/interval: T training accuracy: 0.8250, "
    "training softmaxcrossentropyloss: 0.3248",
    "Validation Begin",
    "[Epoch 0] Finished in T, validation accuracy: 0.8500, "
    "validation softmaxcrossentropyloss: 0.2589",
    "[Epoch 1] Finished in T, training accuracy: 0.8250, training softmaxcrossentropyloss: 0.3248",
    "Train finished using total Twith 2 epochs. training accuracy: 0.8250, "
    "training softmaxcrossentropyloss: 0.3248",
]


def test_fit_with_validation_and_batch_logging_matches_mxnet():
    est, buf = _estimator()
    est.fit(_loader(), val_data=_loader(20), epochs=2,
            event_handlers=[LoggingHandler(log_interval=2, metrics=est.train_metrics)])
    assert _lines(buf) == _LOG_INTERVAL_2
    got = [m.get()[1] for m in est.train_metrics + est.val_metrics]
    # from MXNet 1.9.1
    np.testing.assert_allclose(got, [0.825, 0.3247818797826767, 0.85, 0.25890021920204165],
                               rtol=1e-5)


def test_fit_by_batches_and_evaluate_match_mxnet():
    est, buf = _estimator()
    est.fit(_loader(), batches=3)
    # from MXNet 1.9.1
    assert _lines(buf) == [
        "Training begin: using optimizer SGD with current learning rate 0.5000 ",
        "Train for 3 batches.",
        "[Epoch 0] Begin, current learning rate: 0.5000",
        "[Epoch 0] Finished in T, training accuracy: 0.5417, "
        "training softmaxcrossentropyloss: 0.5660",
        "Train finished using total Twith 1 epochs. training accuracy: 0.5417, "
        "training softmaxcrossentropyloss: 0.5660"]
    est, buf = _estimator()
    est.evaluate(_loader(20))
    assert _lines(buf) == [
        "Validation Begin",
        "[Epoch 0] Finished in T, validation accuracy: 0.4750, "
        "validation softmaxcrossentropyloss: 0.6931"]
    np.testing.assert_allclose([m.get()[1] for m in est.val_metrics], [0.475, 0.693145751953125],
                               rtol=1e-5)


def test_log_interval_batch_logs_every_batch_and_bad_values_raise():
    est, buf = _estimator()
    est.fit(_loader(), batches=3, event_handlers=[LoggingHandler("batch", est.train_metrics)])
    assert sum("][Batch " in line for line in _lines(buf)) == 3
    for bad in ("every", 0, 1.5):
        with pytest.raises(ValueError):
            LoggingHandler(log_interval=bad)


def test_checkpoints_written_rotated_and_resumed_as_mxnet(tmp_path):
    d = str(tmp_path)
    net = _net()
    net.hybridize()
    est, buf = _estimator(net)
    ck = CheckpointHandler(d, model_prefix="m", monitor=est.train_metrics[0], save_best=True,
                           mode="max", max_checkpoints=2, verbose=1)
    est.fit(_loader(), epochs=3, event_handlers=[ck])
    # from MXNet 1.9.1
    assert sorted(os.listdir(d)) == [
        "m-best.params", "m-best.states", "m-epoch1batch10.params", "m-epoch1batch10.states",
        "m-epoch2batch15.params", "m-epoch2batch15.states", "m-symbol.json"]
    log = [line for line in _lines(buf) if "Checkpoint" in line]
    assert log[0].endswith("saving model at %s with prefix: m-epoch0batch5" % d)
    assert "improved from -inf to 0.60000" in log[1]
    assert log[-1].startswith("[Epoch 2] CheckpointHandler: training accuracy did not improve")
    # the best checkpoint holds the parameters of the best epoch (epoch 1)
    best = _net()
    best.load_parameters(os.path.join(d, "m-best.params"))
    est2, buf2 = _estimator()
    ck2 = CheckpointHandler(d, model_prefix="m", resume_from_checkpoint=True)
    resumed_weight = []

    class Spy(TrainBegin):
        priority = 100

        def train_begin(self, estimator, *args, **kwargs):
            resumed_weight.append(estimator.net[0].weight.data().asnumpy())

    est2.fit(_loader(), epochs=5, event_handlers=[ck2, Spy()])
    # from MXNet 1.9.1: two epochs remain, numbered on from the checkpoint
    assert sorted(os.listdir(d)) == [
        "m-best.params", "m-best.states", "m-epoch1batch10.params", "m-epoch1batch10.states",
        "m-epoch2batch15.params", "m-epoch2batch15.states", "m-epoch3batch20.params",
        "m-epoch3batch20.states", "m-epoch4batch25.params", "m-epoch4batch25.states",
        "m-symbol.json"]
    assert _lines(buf2)[:3] == [
        "CheckpointHandler: Checkpoint resumed from epoch 2 batch 15, continue to train for 2 "
        "epochs ", "Training begin: using optimizer SGD with current learning rate 0.5000 ",
        "Train for 2 epochs."]
    np.testing.assert_array_equal(resumed_weight[0], net[0].weight.data().asnumpy())
    assert not np.array_equal(best[0].weight.data().asnumpy(), resumed_weight[0])
    # everything trained already: resuming refuses
    est3, _ = _estimator()
    with pytest.raises(ValueError, match="maximum number of epoch"):
        est3.fit(_loader(), epochs=3,
                 event_handlers=[CheckpointHandler(d, model_prefix="m",
                                                   resume_from_checkpoint=True)])


def test_batch_period_checkpoints_match_mxnet(tmp_path):
    est, buf = _estimator()
    ck = CheckpointHandler(str(tmp_path), model_prefix="b", epoch_period=None, batch_period=2)
    est.fit(_loader(), batches=7, event_handlers=[ck])
    # from MXNet 1.9.1 (the default max_checkpoints=5 keeps all three)
    assert sorted(os.listdir(tmp_path)) == [
        "b-epoch0batch1.params", "b-epoch0batch1.states", "b-epoch0batch3.params",
        "b-epoch0batch3.states", "b-epoch1batch5.params", "b-epoch1batch5.states"]
    assert any("symbol file) is not saved" in line for line in _lines(buf))
    with pytest.raises(ValueError, match="same type of period"):
        est.fit(_loader(), batches=3, event_handlers=[
            CheckpointHandler(str(tmp_path), "b", resume_from_checkpoint=True)])


def test_early_stopping_stops_at_the_epoch_mxnet_stops():
    est, buf = _estimator()
    es = EarlyStoppingHandler(est.train_metrics[1], mode="min", patience=1, min_delta=0.05)
    est.fit(_loader(), epochs=30, event_handlers=[es])
    # from MXNet 1.9.1
    assert [es.stopped_epoch, es.current_epoch] == [3, 4]
    assert es.best == pytest.approx(0.2642364174127579, rel=1e-5)
    assert [line for line in _lines(buf) if "Early" in line] == [
        "[Epoch 3] EarlyStoppingHanlder: early stopping due to training "
        "softmaxcrossentropyloss not improving"]
    est, _ = _estimator()
    es = EarlyStoppingHandler(est.train_metrics[0], mode="max", patience=2, baseline=0.99)
    est.fit(_loader(), epochs=30, event_handlers=[es])
    assert [es.stopped_epoch, es.current_epoch] == [1, 2]


def test_early_stopping_auto_mode_picks_max_for_accuracy_and_min_otherwise():
    est, _ = _estimator()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        acc = EarlyStoppingHandler(est.train_metrics[0])
        loss = EarlyStoppingHandler(est.train_metrics[1])
    assert acc.monitor_op(2, 1) and not acc.monitor_op(1, 2)
    assert loss.monitor_op(1, 2) and not loss.monitor_op(2, 1)
    assert any("`greater` operator" in str(x.message) for x in w)
    with pytest.raises(ValueError, match="CompositeEvalMetric"):
        EarlyStoppingHandler(mx.metric.CompositeEvalMetric(["acc"]))
    with pytest.raises(ValueError, match="monitor"):
        EarlyStoppingHandler("accuracy")


class _Recorder(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    def __init__(self, log, tag, priority=0, stop_after_batches=None):
        self.log, self.tag, self.priority = log, tag, priority
        self.stop_after_batches = stop_after_batches
        self.batches = 0

    def train_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "train_begin"))

    def train_end(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "train_end"))

    def epoch_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "epoch_begin"))

    def epoch_end(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "epoch_end"))
        return False

    def batch_begin(self, estimator, *args, **kwargs):
        assert len(kwargs["batch"]) == 2

    def batch_end(self, estimator, *args, **kwargs):
        assert {"batch", "pred", "label", "loss"} <= set(kwargs)
        self.batches += 1
        return self.batches == self.stop_after_batches


def test_custom_handlers_run_in_priority_order_and_can_stop():
    log = []
    est, _ = _estimator()
    late, early = _Recorder(log, "late", priority=5), _Recorder(log, "early", priority=-5)
    est.fit(_loader(), epochs=2, event_handlers=[late, early])
    assert log[:2] == [("early", "train_begin"), ("late", "train_begin")]
    assert log.count(("early", "epoch_end")) == 2 and log[-1] == ("late", "train_end")
    log.clear()
    stopper = _Recorder(log, "stop", stop_after_batches=2)
    est.fit(_loader(), epochs=3, event_handlers=[stopper])
    # a True from batch_end ends the epoch, not training
    assert stopper.batches == 2 + 5 + 5
    assert log.count(("stop", "epoch_end")) == 3


def test_handlers_replace_defaults_and_metric_references_are_checked():
    est, _ = _estimator()
    mine = MetricHandler(est.train_metrics)
    handlers = est._prepare_default_handlers(None, [mine, GradientUpdateHandler(priority=-3000)])
    assert sum(isinstance(h, MetricHandler) for h in handlers) == 1
    assert not any(isinstance(h, ValidationHandler) for h in handlers)
    assert isinstance(handlers[0], GradientUpdateHandler) and handlers[0].priority == -3000
    with pytest.raises(ValueError, match="outside of the known"):
        est.fit(_loader(), epochs=1,
                event_handlers=[MetricHandler([mx.metric.Accuracy()]), StoppingHandler()])
    with pytest.raises(ValueError, match="EventHandler"):
        est.fit(_loader(), epochs=1, event_handlers=["not a handler"])


def test_validation_handler_batch_period_and_val_net():
    est, _ = _estimator()
    calls = []

    def eval_fn(val_data, batch_axis, event_handlers):
        calls.append(batch_axis)

    est.fit(_loader(), epochs=1, event_handlers=[
        ValidationHandler(_loader(20), eval_fn, epoch_period=None, batch_period=2)])
    assert calls == [0, 0]
    # evaluate runs val_net and val_loss
    net = _net()
    zero = gluon.nn.Dense(2, in_units=4)
    zero.initialize(mx.init.Zero())
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), val_net=zero,
                    val_loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                    trainer=gluon.Trainer(net.collect_params(), "sgd"))
    est.logger.handlers = []
    est.evaluate(_loader(20))
    assert est.val_metrics[1].get()[1] == pytest.approx(math.log(2), rel=1e-6)


def test_context_list_splits_each_batch_and_steps_by_the_whole_batch():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = _net()
    net.collect_params().reset_ctx(ctxs)
    steps = []

    class CountingTrainer(gluon.Trainer):
        def step(self, batch_size, ignore_stale_grad=False):
            steps.append(batch_size)
            super().step(batch_size, ignore_stale_grad)

    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), context=ctxs,
                    trainer=CountingTrainer(net.collect_params(), "sgd",
                                            {"learning_rate": 0.5}))
    est.logger.handlers = []
    est.fit(_loader(), batches=2)
    assert steps == [8, 8]
    data, label = BatchProcessor()._get_data_and_label(
        (mx.nd.ones((3, 6)), mx.nd.ones((3, 6))), ctxs, batch_axis=1)
    assert [d.shape for d in data] == [(3, 3), (3, 3)] and data[1].context == mx.cpu(1)


def test_custom_batch_processor_and_initializer():
    class Doubling(BatchProcessor):
        seen = 0

        def fit_batch(self, estimator, train_batch, batch_axis=0):
            Doubling.seen += 1
            return super().fit_batch(estimator, train_batch, batch_axis)

    net = gluon.nn.Dense(2, in_units=4)
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), initializer=mx.init.One(),
                    batch_processor=Doubling())
    est.logger.handlers = []
    np.testing.assert_array_equal(net.weight.data().asnumpy(), np.ones((2, 4)))
    est.fit(_loader(), batches=3)
    assert Doubling.seen == 3
    with pytest.raises(ValueError, match="fit_batch"):
        Estimator(_net(), gluon.loss.L2Loss(), batch_processor=object())


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="loss must be a Loss"):
        Estimator(_net(), "l2")
    with pytest.raises(ValueError, match="context must be"):
        Estimator(_net(), gluon.loss.L2Loss(), context="cpu")
    with pytest.raises(AssertionError, match="not available"):
        Estimator(_net(), gluon.loss.L2Loss(), context=[mx.gpu(100)])
    with pytest.raises(ValueError, match="Trainer"):
        Estimator(_net(), gluon.loss.L2Loss(), trainer="sgd")
    est, _ = _estimator()
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit([(X, Y)], epochs=1)
    with pytest.raises(ValueError, match="exactly one type"):
        est.fit(_loader(), epochs=1, batches=2)
    with pytest.raises(ValueError, match="exactly one type"):
        est.fit(_loader())
    with pytest.raises(ValueError, match="DataLoader"):
        est.evaluate([(X, Y)])
    with pytest.raises(ValueError, match="save best"):
        CheckpointHandler("unused-dir-never-made", save_best=True)
