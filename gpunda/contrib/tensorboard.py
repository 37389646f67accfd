"""MXNet's ``mxnet.contrib.tensorboard``: ``LogMetricsCallback`` writes a training's
metrics as TensorBoard scalars.

MXNet 1.9.1 writes through ``mxboard`` (unmaintained, and it imports MXNet's C library);
gpunda uses ``tensorboardX``'s ``SummaryWriter`` (``pip install tensorboardX``), else
PyTorch's ``torch.utils.tensorboard`` when that is what is installed, imported when the
callback is made. With neither, making the callback raises a GpundaError saying what to
install (MXNet logs an error and fails at the first call instead).
"""
from __future__ import annotations

from gpunda.base import GpundaError

__all__ = ["LogMetricsCallback"]


def _summary_writer_class():
    try:
        from tensorboardX import SummaryWriter
        return SummaryWriter
    except ImportError:
        pass
    try:
        from torch.utils.tensorboard import SummaryWriter
        return SummaryWriter
    except ImportError:
        pass
    raise GpundaError("contrib.tensorboard.LogMetricsCallback needs a TensorBoard writer: "
                      "pip install tensorboardX (torch.utils.tensorboard works too)")


class LogMetricsCallback:
    """A batch- or epoch-end callback logging ``param.eval_metric``'s values as TensorBoard
    scalars (step: ``param.epoch``) into the event files of ``logging_dir``.

    Parameters
    ----------
    logging_dir : str
        The folder for the event files (``tensorboard --logdir`` shows it).
    prefix : str, optional
        Put before each metric name as ``prefix-name`` (to tell train from eval curves).
    """

    def __init__(self, logging_dir, prefix=None):
        self.prefix = prefix
        self.summary_writer = _summary_writer_class()(logging_dir)

    def __call__(self, param):
        """Log the metrics of ``param`` (a ``BatchEndParam``); nothing without a metric."""
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = f"{self.prefix}-{name}"
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)
