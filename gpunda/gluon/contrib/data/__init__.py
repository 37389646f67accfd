"""MXNet's ``mxnet.gluon.contrib.data``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda.gluon.contrib.data import _constants  # noqa: F401
from gpunda.gluon.contrib.data import sampler  # noqa: F401
from gpunda.gluon.contrib.data import text  # noqa: F401
from gpunda.gluon.contrib.data.sampler import IntervalSampler  # noqa: F401
