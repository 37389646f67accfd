"""MXNet's ctypes Symbol layer (``mxnet._ctypes.symbol``): ``SymbolBase`` is gpunda's
Symbol, as ``mx.sym._internal`` has it; registering Symbol classes with the C library and
creating a Symbol from an op handle are stubs that say so."""
from gpunda.symbol import _internal as _sym_internal

SymbolBase = _sym_internal.SymbolBase
_set_symbol_class = _sym_internal._set_symbol_class
_set_np_symbol_class = _sym_internal._set_np_symbol_class
_symbol_creator = _sym_internal._symbol_creator
