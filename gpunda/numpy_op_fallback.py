"""MXNet's ``mxnet.numpy_op_fallback``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('register',),
             classes=('EmptyLike', 'EmptyLikeProp', 'MultivariateNormal', 'MultivariateNormalProp', 'Resize', 'ResizeProp', 'Unravel_index', 'Unravel_indexProp'),
             reason="gpunda does not build mxnet.numpy_op_fallback yet")
