"""MXNet's ``mxnet.contrib.svrg_optimization.svrg_optimizer``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=(),
             classes=('_AssignmentOptimizer', '_SVRGOptimizer'),
             reason="gpunda does not build mxnet.contrib.svrg_optimization.svrg_optimizer yet")
