"""MXNet's ``mx.sym.npx._op``: ``mx.sym.npx``'s operator functions."""
import importlib as _importlib

_NAMES = (
    "activation", "arange_like", "batch_dot", "batch_flatten", "batch_norm", "cast",
    "constraint_check", "convolution", "deconvolution", "dropout", "embedding", "erf", "erfinv",
    "fully_connected", "gamma", "gammaln", "gather_nd", "layer_norm", "leaky_relu",
    "log_softmax", "multibox_detection", "multibox_prior", "multibox_target", "nonzero",
    "one_hot", "pick", "pooling", "relu", "reshape", "reshape_like", "rnn", "roi_pooling",
    "sequence_mask", "shape_array", "sigmoid", "slice", "smooth_l1", "softmax", "topk",
)
_src = _importlib.import_module("gpunda.symbol.numpy_extension")
for _n in _NAMES:
    globals()[_n] = getattr(_src, _n)
del _n, _src, _importlib
