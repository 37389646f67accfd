"""MXNet's ``mxnet.executor_manager``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_bind_exec', '_check_arguments', '_load_data', '_load_general', '_load_label', '_split_input_slice'),
             classes=('DataParallelExecutorGroup', 'DataParallelExecutorManager'),
             reason="gpunda does not build mxnet.executor_manager yet")
