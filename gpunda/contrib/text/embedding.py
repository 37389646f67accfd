"""MXNet's ``mxnet.contrib.text.embedding``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('create', 'get_pretrained_file_names', 'register'),
             classes=('CompositeEmbedding', 'CustomEmbedding', 'FastText', 'GloVe', '_TokenEmbedding'),
             reason="gpunda does not build mxnet.contrib.text.embedding yet")
