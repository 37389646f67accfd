"""MXNet's ``mxnet.symbol.register``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_generate_symbol_function_code', '_make_symbol_function', '_verify_legacy_symbol', '_verify_np_symbol'),
             classes=(),
             reason="gpunda does not build mxnet.symbol.register yet")
