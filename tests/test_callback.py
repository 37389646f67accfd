"""mx.callback: MXNet's log lines and checkpoint periods; mx.model.BatchEndParam."""
import logging

import numpy as np
import pytest

import gpunda as mx


class _Metric:
    def __init__(self):
        self.resets = 0

    def get_name_value(self):
        return [("accuracy", 0.5), ("ce", 1.25)]

    def reset_local(self):
        self.resets += 1


class _Clock:
    """Stands in for the ``time`` module inside gpunda.callback (logging keeps the real one)."""

    def __init__(self, *ticks):
        self._ticks = iter(ticks)

    def time(self):
        return next(self._ticks)


def _param(nbatch, metric=None, epoch=2):
    return mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric, locals={})


def test_batch_end_param_is_mxnets_namedtuple():
    p = _param(3)
    assert type(p).__name__ == "BatchEndParams"
    assert p._fields == ("epoch", "nbatch", "eval_metric", "locals")


def test_speedometer_logs_as_mxnet(caplog, monkeypatch):
    monkeypatch.setattr("gpunda.callback.time", _Clock(100.0, 102.0, 104.0))
    metric = _Metric()
    cb = mx.callback.Speedometer(batch_size=10, frequent=5)
    with caplog.at_level(logging.INFO):
        cb(_param(0, metric))        # starts the clock
        cb(_param(3, metric))        # not a multiple of frequent
        cb(_param(5, metric))        # 5 batches of 10 in 2 s
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs == ["Epoch[2] Batch [0-5]\tSpeed: 25.00 samples/sec\taccuracy=0.500000"
                    "\tce=1.250000"]
    assert metric.resets == 1
    caplog.clear()
    cb = mx.callback.Speedometer(batch_size=10, frequent=5, auto_reset=False)
    monkeypatch.setattr("gpunda.callback.time", _Clock(0.0, 1.0, 1.0))
    with caplog.at_level(logging.INFO):
        cb(_param(0, metric))
        cb(_param(10, metric))
    assert caplog.records[-1].getMessage() == (
        "Epoch[2] Batch [0-10]\tSpeed: 50.00 samples/sec\taccuracy=0.500000\tce=1.250000")
    assert metric.resets == 1


def test_speedometer_without_metric_and_new_epoch(caplog, monkeypatch):
    monkeypatch.setattr("gpunda.callback.time", _Clock(0.0, 4.0, 10.0, 11.0))
    cb = mx.callback.Speedometer(batch_size=2, frequent=2)
    with caplog.at_level(logging.INFO):
        cb(_param(4))
        cb(_param(6))
        cb(_param(0))   # nbatch went down: a new epoch restarts the clock, no log
    assert [r.getMessage() for r in caplog.records] == [
        "Iter[2] Batch [6]\tSpeed: 1.00 samples/sec"]


def test_log_train_metric_progress_bar_and_validation(caplog):
    metric = _Metric()
    with caplog.at_level(logging.INFO):
        mx.callback.log_train_metric(2, auto_reset=True)(_param(4, metric))
        mx.callback.log_train_metric(2)(_param(3, metric))
        mx.callback.ProgressBar(total=4, length=8)(_param(1))
        mx.callback.LogValidationMetricsCallback()(_param(1, metric, epoch=0))
    assert [r.getMessage() for r in caplog.records] == [
        "Iter[2] Batch[4] Train-accuracy=0.500000", "Iter[2] Batch[4] Train-ce=1.250000",
        "[==------] 25%\r",
        "Epoch[0] Validation-accuracy=0.500000", "Epoch[0] Validation-ce=1.250000"]
    assert metric.resets == 1


def test_do_checkpoint_and_module_checkpoint_periods(tmp_path):
    data = mx.sym.Variable("data")
    sym = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    arg = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    cb = mx.callback.do_checkpoint(str(tmp_path / "m"), period=2)
    for epoch in range(4):
        cb(epoch, sym, arg, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-0002.params", "m-0004.params",
                                                          "m-symbol.json"]
    _, loaded, _ = mx.model.load_checkpoint(str(tmp_path / "m"), 4)
    np.testing.assert_array_equal(loaded["fc_weight"].asnumpy(), np.ones((2, 3)))

    mod = mx.mod.Module(sym, label_names=None)
    mod.bind([("data", (1, 3))])
    mod.init_params()
    mod.init_optimizer()
    mcb = mx.callback.module_checkpoint(mod, str(tmp_path / "mod"), period=3,
                                        save_optimizer_states=True)
    for epoch in range(3):
        mcb(epoch)
    assert (tmp_path / "mod-0003.params").exists() and (tmp_path / "mod-0003.states").exists()
    assert not (tmp_path / "mod-0001.params").exists()


def test_fit_calls_callbacks():
    rng = np.random.RandomState(0)
    it = mx.io.NDArrayIter(rng.randn(8, 3).astype(np.float32), np.zeros(8, np.float32),
                           batch_size=4, label_name="softmax_label")
    data = mx.sym.Variable("data")
    sym = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"),
                               name="softmax")
    seen = []
    mod = mx.mod.Module(sym)
    mod.fit(it, eval_data=it, num_epoch=2,
            batch_end_callback=lambda p: seen.append(("batch", p.epoch, p.nbatch)),
            epoch_end_callback=lambda e, s, a, x: seen.append(("epoch", e, sorted(a))),
            eval_end_callback=lambda p: seen.append(("eval", p.epoch, p.nbatch)))
    names = ["fc_bias", "fc_weight"]
    assert seen == [("batch", 0, 0), ("batch", 0, 1), ("epoch", 0, names), ("eval", 0, 2),
                    ("batch", 1, 0), ("batch", 1, 1), ("epoch", 1, names), ("eval", 1, 2)]
    with pytest.raises(mx.base.GpundaError, match="num_epoch"):
        mod.fit(it)
