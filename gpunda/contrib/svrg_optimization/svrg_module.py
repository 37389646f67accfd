"""MXNet's ``mxnet.contrib.svrg_optimization.svrg_module``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=(),
             classes=('SVRGModule',),
             reason="gpunda does not build mxnet.contrib.svrg_optimization.svrg_module yet")
