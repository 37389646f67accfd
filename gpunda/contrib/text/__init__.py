"""MXNet's ``mxnet.contrib.text``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda.contrib.text import _constants  # noqa: F401
from gpunda.contrib.text import embedding  # noqa: F401
from gpunda.contrib.text import utils  # noqa: F401
from gpunda.contrib.text import vocab  # noqa: F401
