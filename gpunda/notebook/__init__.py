"""MXNet's ``mxnet.notebook``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs
from gpunda.notebook import callback  # noqa: F401

define_stubs(globals(), functions=(),
             classes=('Bokeh_Failed_To_Import', 'bokeh'),
             reason="gpunda does not build mxnet.notebook yet")
