"""mx.notebook: the callbacks' rules as MXNet 1.9.1's (notebook/callback.py at tag 1.9.1),
with pandas/bokeh when installed, a recording stand-in for bokeh, and clear errors when a
package is missing."""
import sys
import types

import pytest

import gpunda as mx
from gpunda.model import BatchEndParam
from gpunda.notebook import callback as nbc


def _param(nbatch, epoch=0, acc_pairs=((1, [0.2, 0.8]), (0, [0.9, 0.1]))):
    m = mx.metric.Accuracy()
    m.update([mx.nd.array([a for a, _ in acc_pairs])], [mx.nd.array([p for _, p in acc_pairs])])
    return BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=m, locals=None)


def test_helpers_and_args_wrapper():
    base = [1, 2]
    nbc._extend(base, [9, 9, 3, 4])
    assert base == [1, 2, 3, 4]

    class CB:
        def __init__(self, tag):
            self.tag = tag

        def callback_args(self):
            return {"batch_end_callback": self.tag, "eval_end_callback": self.tag + "e"}
    assert nbc.args_wrapper(CB("a"), CB("b")) == {"batch_end_callback": ["a", "b"],
                                                  "eval_end_callback": ["ae", "be"]}


def test_missing_packages_are_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setitem(sys.modules, "bokeh", None)
    monkeypatch.delitem(nbc.__dict__, "pd", raising=False)
    import gpunda.notebook as nb
    monkeypatch.delitem(nb.__dict__, "bokeh", raising=False)
    assert nbc.pd is nbc.Pandas_Failed_To_Import and nb.bokeh is nb.Bokeh_Failed_To_Import
    with pytest.raises(mx.MXNetError, match="PandasLogger needs the pandas package.*pip install "
                                            "pandas"):
        nbc.PandasLogger(batch_size=4)
    with pytest.raises(mx.MXNetError, match="LiveLearningCurve needs the bokeh package"):
        nbc.LiveLearningCurve("accuracy")
    with pytest.raises(AttributeError):
        nbc.not_a_name  # noqa: B018


def test_pandas_logger_rows(monkeypatch):
    pd = pytest.importorskip("pandas")
    log = nbc.PandasLogger(batch_size=4, frequent=2)
    log.train_cb(_param(0))
    log.train_cb(_param(1))            # not a multiple of frequent: skipped
    log.train_cb(_param(2, acc_pairs=((0, [0.2, 0.8]),)))
    log.eval_cb(_param(5, epoch=1))
    log.epoch_cb()
    assert isinstance(log.train_df, pd.DataFrame)
    assert list(log.train_df["accuracy"]) == [1.0, 0.0]
    assert list(log.train_df["minibatch_count"]) == [0, 2]
    assert set(log.train_df.columns) == {"accuracy", "batches_per_sec", "records_per_sec",
                                         "elapsed", "minibatch_count", "epoch"}
    assert list(log.eval_df["epoch"]) == [1] and len(log.epoch_df) == 1
    assert set(log.epoch_df.columns) == {"elapsed", "epoch_time"}
    assert log.all_dataframes["train"] is log.train_df
    assert set(log.callback_args()) == {"batch_end_callback", "eval_end_callback",
                                        "epoch_end_callback"}


class _Glyph:
    def __init__(self, x, y, kw):
        self.x, self.y, self.kw, self.visible = x, y, kw, True


class _Fig:
    def __init__(self, **kw):
        self.kw, self.glyphs = kw, []
        self.legend = types.SimpleNamespace(location=None)
        self.yaxis = types.SimpleNamespace(axis_label=None)

    def line(self, x, y, **kw):
        self.glyphs.append(_Glyph(x, y, kw))
        return self.glyphs[-1]
    scatter = line


def _fake_bokeh(monkeypatch, pushes):
    io = types.SimpleNamespace(output_notebook=lambda: None,
                               push_notebook=lambda handle: pushes.append(handle))
    plotting = types.SimpleNamespace(figure=_Fig, show=lambda fig, notebook_handle: "handle")
    bokeh = types.SimpleNamespace(io=io, plotting=plotting)
    for name, mod in (("bokeh", bokeh), ("bokeh.io", io), ("bokeh.plotting", plotting)):
        monkeypatch.setitem(sys.modules, name, mod)


def test_live_learning_curve_collects_and_draws(monkeypatch):
    pytest.importorskip("pandas")       # the chart makes a PandasLogger, as MXNet's does
    pushes = []
    _fake_bokeh(monkeypatch, pushes)
    chart = nbc.LiveLearningCurve("accuracy", display_freq=3600, frequent=2)
    assert chart.handle == "handle" and chart.fig.yaxis.axis_label == "accuracy"
    chart.batch_cb(_param(0))
    chart.batch_cb(_param(1))           # skipped (frequent), no redraw (display_freq)
    assert pushes == [] and chart._data["train"]["accuracy"] == [1.0]
    chart.eval_cb(_param(3, acc_pairs=((0, [0.2, 0.8]),)))
    assert pushes == ["handle"]
    assert chart.y_axis_val1 == [1.0] and chart.y_axis_val2 == [0.0]
    assert len(chart.x_axis_val2) == 1
    assert set(chart.callback_args()) == {"batch_end_callback", "eval_end_callback"}


def test_live_chart_outside_jupyter_says_so(monkeypatch):
    pytest.importorskip("pandas")
    _fake_bokeh(monkeypatch, [])

    def no_ipython():
        raise ModuleNotFoundError("No module named 'IPython'")
    monkeypatch.setattr(sys.modules["bokeh.io"], "output_notebook", no_ipython)
    with pytest.raises(mx.MXNetError, match="Jupyter notebook and needs IPython"):
        nbc.LiveLearningCurve("accuracy")
