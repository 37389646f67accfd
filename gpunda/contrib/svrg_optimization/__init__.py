"""MXNet's ``mxnet.contrib.svrg_optimization``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda.contrib.svrg_optimization import svrg_module  # noqa: F401
from gpunda.contrib.svrg_optimization import svrg_optimizer  # noqa: F401
