"""MXNet's ``mxnet.gluon.contrib.data.text``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=(),
             classes=('WikiText103', 'WikiText2', '_LanguageModelDataset', '_WikiText'),
             reason="gpunda does not build mxnet.gluon.contrib.data.text yet")
