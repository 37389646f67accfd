"""MXNet's ``mxnet.notebook.callback``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_add_new_columns', '_extend', 'args_wrapper'),
             classes=('LiveBokehChart', 'LiveLearningCurve', 'LiveTimeSeries', 'PandasLogger', 'Pandas_Failed_To_Import', 'pd'),
             reason="gpunda does not build mxnet.notebook.callback yet")
