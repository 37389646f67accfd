"""MXNet's ctypes NDArray handle layer; stubs (see ``gpunda._ctypes``)."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_imperative_invoke', '_monitor_callback_wrapper'),
             classes=('NDArrayBase', 'CachedOp'),
             reason="it calls MXNet's C++ library through ctypes, which gpunda does not have")
