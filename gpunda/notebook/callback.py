"""MXNet's ``mxnet.notebook.callback``: training callbacks for Jupyter notebooks.

``PandasLogger`` keeps the metrics of training batches, evaluations and epochs in pandas
data frames; ``LiveLearningCurve`` and ``LiveTimeSeries`` draw live bokeh charts (they
collect through a ``PandasLogger`` too); ``args_wrapper`` merges several objects'
``callback_args()`` for ``model.fit``. pandas and bokeh are imported when a callback is
made; a missing one raises a GpundaError naming the package to install. ``pd`` is the
pandas module when it is installed, else the placeholder class ``Pandas_Failed_To_Import``,
as in MXNet 1.9.1.
"""
from __future__ import annotations

import datetime
import time
from collections import defaultdict

from gpunda._core.reexports import optional_module_getattr
from gpunda.base import GpundaError

__all__ = ["PandasLogger", "LiveBokehChart", "LiveTimeSeries", "LiveLearningCurve",
           "args_wrapper"]


class Pandas_Failed_To_Import:  # noqa: N801 - MXNet's name
    """Stands for ``pandas`` when it is not installed (``pip install pandas``)."""


# pandas as pd, as MXNet's module shows it (Pandas_Failed_To_Import without it), loaded on
# first use
__getattr__ = optional_module_getattr(__name__, "pd", "pandas", Pandas_Failed_To_Import)


def _need(package, what):
    """The module ``package`` (``bokeh.plotting``, ``pandas``), or a GpundaError saying
    that ``what`` needs it."""
    import importlib
    try:
        return importlib.import_module(package)
    except ImportError:
        top = package.split(".")[0]
        raise GpundaError(f"mx.notebook.callback.{what} needs the {top} package, which is not "
                          f"installed (pip install {top})") from None


def _add_new_columns(dataframe, metrics):
    """Add a column (of None) to ``dataframe`` for each key of ``metrics`` it lacks."""
    for col in set(metrics.keys()) - set(dataframe.columns):
        dataframe[col] = None


def _extend(baseData, newData):  # noqa: N803 - MXNet's names
    """Append to ``baseData`` the items of ``newData`` past its length."""
    baseData.extend(newData[len(baseData):])


class PandasLogger:
    """Logs a training's statistics into three pandas data frames: ``train`` (every
    ``frequent`` batches), ``eval`` (each evaluation) and ``epoch`` (timing).

    Parameters
    ----------
    batch_size : int
        The batch size of the data.
    frequent : int, default 50
        Log the training metrics every this many batches.
    """

    def __init__(self, batch_size, frequent=50):
        pd = _need("pandas", "PandasLogger")
        self.batch_size = batch_size
        self.frequent = frequent
        self._dataframes = {"train": pd.DataFrame(), "eval": pd.DataFrame(),
                            "epoch": pd.DataFrame()}
        self.last_time = time.time()
        self.start_time = datetime.datetime.now()
        self.last_epoch_time = datetime.datetime.now()

    @property
    def train_df(self):
        """The training metrics, one row every ``frequent`` batches."""
        return self._dataframes["train"]

    @property
    def eval_df(self):
        """The evaluation metrics, one row per evaluation."""
        return self._dataframes["eval"]

    @property
    def epoch_df(self):
        """The epochs' timing."""
        return self._dataframes["epoch"]

    @property
    def all_dataframes(self):
        """The dict of the three data frames."""
        return self._dataframes

    def elapsed(self):
        """The time since the logger was made (a ``datetime.timedelta``)."""
        return datetime.datetime.now() - self.start_time

    def append_metrics(self, metrics, df_name):
        """Append the dict ``metrics`` as a row of the data frame ``df_name``."""
        dataframe = self._dataframes[df_name]
        _add_new_columns(dataframe, metrics)
        dataframe.loc[len(dataframe)] = metrics

    def train_cb(self, param):
        """Batch-end callback: log every ``frequent`` batches."""
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, "train")

    def eval_cb(self, param):
        """Evaluation-end callback."""
        self._process_batch(param, "eval")

    def _process_batch(self, param, df_name):
        now = time.time()
        if param.eval_metric is not None:
            metrics = dict(param.eval_metric.get_name_value())
            param.eval_metric.reset()
        else:
            metrics = {}
        try:
            speed = self.frequent / (now - self.last_time)
        except ZeroDivisionError:
            speed = float("inf")
        # MXNet 1.9.1's columns, as it fills them
        metrics["batches_per_sec"] = speed * self.batch_size
        metrics["records_per_sec"] = speed
        metrics["elapsed"] = self.elapsed()
        metrics["minibatch_count"] = param.nbatch
        metrics["epoch"] = param.epoch
        self.append_metrics(metrics, df_name)
        self.last_time = now

    def epoch_cb(self):
        """Epoch-end callback: log the time of the epoch."""
        now = datetime.datetime.now()
        self.append_metrics({"elapsed": self.elapsed(),
                             "epoch_time": now - self.last_epoch_time}, "epoch")
        self.last_epoch_time = now

    def callback_args(self):
        """The ``model.fit`` keyword arguments installing these callbacks."""
        return {"batch_end_callback": self.train_cb, "eval_end_callback": self.eval_cb,
                "epoch_end_callback": self.epoch_cb}


def _figure(plotting, **kwargs):
    # MXNet calls bokeh.plotting.Figure, which bokeh 3 removed; figure() is in every version
    return plotting.figure(**kwargs)


class LiveBokehChart:
    """Base of the live bokeh charts in a Jupyter notebook: subclasses define
    ``setup_chart`` (returns the notebook handle) and ``update_chart_data``. Needs bokeh
    (and pandas, for the ``PandasLogger`` made when none is given)."""

    def __init__(self, pandas_logger, metric_name, display_freq=10, batch_size=None,
                 frequent=50):
        self._bokeh_io = _need("bokeh.io", type(self).__name__)
        if pandas_logger:
            self.pandas_logger = pandas_logger
        else:
            self.pandas_logger = PandasLogger(batch_size=batch_size, frequent=frequent)
        self.display_freq = display_freq
        self.last_update = time.time()
        self.metric_name = metric_name
        try:
            self._bokeh_io.output_notebook()
        except ImportError as err:      # bokeh draws into Jupyter through IPython
            raise GpundaError(f"mx.notebook.callback.{type(self).__name__} draws in a Jupyter "
                              f"notebook and needs IPython there ({err})") from None
        self.handle = self.setup_chart()

    def setup_chart(self):
        """Draw the chart; return its notebook handle."""
        raise NotImplementedError("Incomplete base class: LiveBokehChart must be sub-classed")

    def update_chart_data(self):
        """Put the new data into the chart."""
        raise NotImplementedError("Incomplete base class: LiveBokehChart must be sub-classed")

    def interval_elapsed(self):
        """Whether ``display_freq`` seconds passed since the last redraw."""
        return time.time() - self.last_update > self.display_freq

    def _push_render(self):
        self._bokeh_io.push_notebook(handle=self.handle)
        self.last_update = time.time()

    def _do_update(self):
        self.update_chart_data()
        self._push_render()

    def batch_cb(self, param):
        """Batch-end callback: redraw every ``display_freq`` seconds."""
        if self.interval_elapsed():
            self._do_update()

    def eval_cb(self, param):
        """Evaluation-end callback: redraw."""
        self._do_update()

    def callback_args(self):
        """The ``model.fit`` keyword arguments installing these callbacks."""
        return {"batch_end_callback": self.batch_cb, "eval_end_callback": self.eval_cb}


class LiveTimeSeries(LiveBokehChart):
    """A live line of values against the elapsed time (``update_chart_data(value)``);
    ``fig_params`` go to bokeh's figure."""

    def __init__(self, **fig_params):
        plotting = _need("bokeh.plotting", "LiveTimeSeries")
        self.fig = _figure(plotting, x_axis_type="datetime", x_axis_label="Elapsed time",
                           **fig_params)
        super().__init__(None, None)

    def setup_chart(self):
        plotting = _need("bokeh.plotting", "LiveTimeSeries")
        self.start_time = datetime.datetime.now()
        self.x_axis_val = []
        self.y_axis_val = []
        self.fig.line(self.x_axis_val, self.y_axis_val)
        return plotting.show(self.fig, notebook_handle=True)

    def elapsed(self):
        """The time since the chart was drawn."""
        return datetime.datetime.now() - self.start_time

    def update_chart_data(self, value):
        self.x_axis_val.append(self.elapsed())
        self.y_axis_val.append(value)
        self._push_render()


class LiveLearningCurve(LiveBokehChart):
    """A live learning curve of ``metric_name``: training values (every ``frequent``
    batches) and validation values (each evaluation) against the training time."""

    def __init__(self, metric_name, display_freq=10, frequent=50):
        self.frequent = frequent
        self.start_time = datetime.datetime.now()
        self._data = {"train": {"elapsed": []}, "eval": {"elapsed": []}}
        # MXNet 1.9.1 passes `frequent` in the batch_size place; kept as it is
        super().__init__(None, metric_name, display_freq, frequent)

    def setup_chart(self):
        plotting = _need("bokeh.plotting", "LiveLearningCurve")
        self.fig = _figure(plotting, x_axis_type="datetime", x_axis_label="Training time")
        self.x_axis_val1 = []
        self.y_axis_val1 = []
        self.train1 = self.fig.line(self.x_axis_val1, self.y_axis_val1, line_dash="dotted",
                                    alpha=0.3, legend_label="train")
        self.train2 = self.fig.scatter(self.x_axis_val1, self.y_axis_val1, size=1.5,
                                       line_alpha=0.3, fill_alpha=0.3, legend_label="train")
        self.train2.visible = False     # shown once there is enough data
        self.x_axis_val2 = []
        self.y_axis_val2 = []
        self.valid1 = self.fig.line(self.x_axis_val2, self.y_axis_val2, line_color="green",
                                    line_width=2, legend_label="validation")
        self.valid2 = self.fig.scatter(self.x_axis_val2, self.y_axis_val2,
                                       line_color="green", line_width=2)
        self.fig.legend.location = "bottom_right"
        self.fig.yaxis.axis_label = self.metric_name
        return plotting.show(self.fig, notebook_handle=True)

    def _do_update(self):
        self.update_chart_data()
        self._push_render()

    def batch_cb(self, param):
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, "train")
        if self.interval_elapsed():
            self._do_update()

    def eval_cb(self, param):
        self._process_batch(param, "eval")
        self._do_update()

    def _process_batch(self, param, df_name):
        if param.eval_metric is not None:
            metrics = dict(param.eval_metric.get_name_value())
            param.eval_metric.reset()
        else:
            metrics = {}
        metrics["elapsed"] = datetime.datetime.now() - self.start_time
        for key, value in metrics.items():
            self._data[df_name].setdefault(key, []).append(value)

    def update_chart_data(self):
        train = self._data["train"]
        if len(train["elapsed"]):
            _extend(self.x_axis_val1, train["elapsed"])
            _extend(self.y_axis_val1, train[self.metric_name])
        evals = self._data["eval"]
        if len(evals["elapsed"]):
            _extend(self.x_axis_val2, evals["elapsed"])
            _extend(self.y_axis_val2, evals[self.metric_name])
        if len(evals) > 10:     # MXNet 1.9.1 counts the eval columns here
            self.train1.visible = False
            self.train2.visible = True


def args_wrapper(*args):
    """Merge the ``callback_args()`` of several callback objects into one dict of lists
    for ``model.fit``."""
    out = defaultdict(list)
    for cb in args:
        for key, fn in cb.callback_args().items():
            out[key].append(fn)
    return dict(out)
