"""MXNet's TVM operator config spaces (``mxnet.space``); stubs: using one raises
NotImplementedForGpunda."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=(),
             classes=('ConfigSpace', 'ConfigSpaces', 'OtherOptionEntity', 'OtherOptionSpace'),
             reason='it needs MXNet built with TVM operators (USE_TVM_OP), which gpunda is not')
