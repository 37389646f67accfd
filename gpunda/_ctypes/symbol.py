"""MXNet's ctypes Symbol handle layer; stubs (see ``gpunda._ctypes``)."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_set_symbol_class', '_set_np_symbol_class', '_symbol_creator'),
             classes=('SymbolBase',),
             reason="it calls MXNet's C++ library through ctypes, which gpunda does not have")
