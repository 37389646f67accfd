"""MXNet's Torch plugin (``mxnet.torch``); stubs: MXNet must be built with the plugin."""
from gpunda._core.not_built import define_stubs

_LUAJIT = None

define_stubs(globals(), functions=('_init_torch_module', '_make_torch_function'),
             classes=(),
             reason='it needs MXNet built with the Torch plugin (MXNET_USE_TORCH), which gpunda is not')
