"""``npx.random``: the seed (shared with ``mx.random``)."""
from .._not_built import missing_module_getattr
from ..random import seed  # noqa: F401

__getattr__ = missing_module_getattr("mxnet.numpy_extension.random",
                                     "this sampler of mx.npx.random")
