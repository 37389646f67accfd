"""MXNet's ``mxnet.contrib.text``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from . import _constants  # noqa: F401
from . import embedding  # noqa: F401
from . import utils  # noqa: F401
from . import vocab  # noqa: F401
