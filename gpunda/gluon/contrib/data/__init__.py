"""MXNet's ``mxnet.gluon.contrib.data``: ``IntervalSampler`` and the WikiText language-model
data sets (``text``)."""
from gpunda.gluon.contrib.data import _constants  # noqa: F401
from gpunda.gluon.contrib.data import sampler  # noqa: F401
from gpunda.gluon.contrib.data import text  # noqa: F401
from gpunda.gluon.contrib.data.sampler import IntervalSampler  # noqa: F401

__all__ = ["IntervalSampler"]
