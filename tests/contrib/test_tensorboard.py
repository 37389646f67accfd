"""mx.contrib.tensorboard.LogMetricsCallback: MXNet 1.9.1's logging rules (names, prefix,
step = epoch, nothing without a metric) through a recording writer, the real event file
through tensorboardX when it is installed, and a clear error without a writer package."""
import struct
import sys
import types

import pytest

import gpunda as mx
from gpunda.model import BatchEndParam


class _Recorder:
    made = []

    def __init__(self, logdir):
        self.logdir, self.scalars = logdir, []
        _Recorder.made.append(self)

    def add_scalar(self, name, value, global_step=None):
        self.scalars.append((name, value, global_step))


def _metric():
    m = mx.metric.create(["acc", "mse"])
    m.update([mx.nd.array([1, 0])], [mx.nd.array([[0.2, 0.8], [0.9, 0.1]])])
    return m


def test_logs_each_metric_with_prefix_at_the_epoch(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", types.SimpleNamespace(SummaryWriter=_Recorder))
    cb = mx.contrib.tensorboard.LogMetricsCallback(str(tmp_path), prefix="train")
    w = _Recorder.made[-1]
    assert w.logdir == str(tmp_path)
    cb(BatchEndParam(epoch=3, nbatch=7, eval_metric=_metric(), locals=None))
    names = [s[0] for s in w.scalars]
    assert names == ["train-accuracy", "train-mse"] and {s[2] for s in w.scalars} == {3}
    assert [s[1] for s in w.scalars] == [pytest.approx(1.0), pytest.approx(0.375)]  # MXNet 1.9.1
    cb(BatchEndParam(epoch=4, nbatch=0, eval_metric=None, locals=None))
    assert len(w.scalars) == 2
    plain = mx.contrib.tensorboard.LogMetricsCallback(str(tmp_path))
    plain(BatchEndParam(epoch=0, nbatch=0, eval_metric=_metric(), locals=None))
    assert [s[0] for s in _Recorder.made[-1].scalars] == ["accuracy", "mse"]


def test_without_a_writer_package_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)      # import fails
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(mx.MXNetError, match="pip install tensorboardX"):
        mx.contrib.tensorboard.LogMetricsCallback(str(tmp_path))


def _read_events(path):
    """The Event protos of one TFRecord event file (length, crc, data, crc per record)."""
    from tensorboardX.proto import event_pb2
    out = []
    with open(path, "rb") as f:
        while True:
            head = f.read(12)
            if len(head) < 12:
                return out
            (n,) = struct.unpack("<Q", head[:8])
            data = f.read(n)
            f.read(4)
            ev = event_pb2.Event()
            ev.ParseFromString(data)
            out.append(ev)


def test_writes_a_tensorboard_event_file(tmp_path):
    pytest.importorskip("tensorboardX")
    cb = mx.contrib.tensorboard.LogMetricsCallback(str(tmp_path), prefix="eval")
    cb(BatchEndParam(epoch=2, nbatch=0, eval_metric=_metric(), locals=None))
    cb.summary_writer.close()
    files = list(tmp_path.iterdir())
    assert len(files) == 1
    got = [(v.tag, round(v.simple_value, 5), e.step) for e in _read_events(str(files[0]))
           for v in e.summary.value]
    assert got == [("eval-accuracy", 1.0, 2), ("eval-mse", 0.375, 2)]
