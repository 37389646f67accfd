"""Operator families. Importing this package registers every op."""
from gpunda.ops import registry
from gpunda.ops.registry import OpDef, Param, register, get_op, all_ops

from gpunda.ops.tensor import elemwise  # noqa: F401

_families = ["np_elemwise", "np_reduce", "np_manip", "np_linalg", "np_random", "np_sort", "np_stats", "reduce", "matrix", "indexing", "linalg", "random", "nn", "optim", "sparse_ops",
             "custom", "creation", "rnn", "sequence", "image", "image_color", "ctc",
             "vision", "vision_resample", "vision_sampling", "nn_norm", "amp", "nn_im2col",
             "crop", "contrib_nlp", "random_pdf", "fft", "count_sketch", "quantize", "random_unique",
             "detection_box", "multibox", "proposal", "vision_rroi", "correlation", "deformable",
             "deformable_psroi", "control_flow", "np_creation", "np_extension", "optim_multi",
             "optim_lamb_adamw", "contrib_misc", "hawkes", "dgl_graph", "np_indexing",
             "quantized_nn", "quantized_math", "quantized_rnn", "contrib_backward",
             "dgl_sampling", "nn_loss", "legacy_aliases"]
for _f in _families:
    try:
        __import__(f"{__name__}.{_f}")
    except ModuleNotFoundError as _e:   # a family not written yet
        if _e.name != f"{__name__}.{_f}":
            raise
