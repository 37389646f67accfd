"""The operator layer: the registry (ops/registry.py) and the op families, one subpackage per
family as in MXNet's src/operator (tensor, nn, contrib, vision, numpy, random, image,
quantization, sparse, optimizer, control_flow), with the CPU fast kernels in ops/kernels.
Importing this package registers every op, family by family in the order below (a later
family may alias an earlier one's op).
"""
from gpunda.ops import registry
from gpunda.ops.registry import OpDef, Param, register, get_op, all_ops

_FAMILY_MODULES = [
    "tensor.elemwise", "numpy.elemwise", "numpy.reduce", "numpy.manip", "numpy.linalg",
    "numpy.random", "numpy.sort", "numpy.stats", "tensor.reduce", "tensor.matrix",
    "tensor.indexing", "tensor.linalg", "random.samplers", "nn.basic", "optimizer.updates",
    "sparse.ops", "control_flow.custom", "tensor.creation", "nn.rnn", "nn.sequence",
    "image.transforms", "image.color", "nn.ctc", "vision.roi", "vision.resample",
    "vision.sampling", "nn.norm", "tensor.amp", "nn.im2col", "nn.crop", "contrib.nlp",
    "random.pdf", "contrib.fft", "contrib.count_sketch", "quantization.quantize",
    "random.unique", "vision.detection_box", "vision.multibox", "vision.proposal",
    "vision.rroi", "vision.correlation", "vision.deformable", "vision.deformable_psroi",
    "control_flow.loops", "numpy.creation", "numpy.extension", "optimizer.multi",
    "optimizer.lamb_adamw", "contrib.misc", "contrib.hawkes", "contrib.dgl_graph",
    "numpy.indexing", "quantization.nn", "quantization.math", "quantization.rnn",
    "quantization.sg_fused", "quantization.sg_fused_fc", "quantization.sg_selfatt",
    "contrib.backward", "contrib.dgl_sampling", "nn.loss", "control_flow.subgraph",
    "tensor.ndarray_funcs", "image.cv", "numpy.no_bool",
]
for _m in _FAMILY_MODULES:
    __import__(f"{__name__}.{_m}")

from gpunda.ops import _mxnet_aliases  # noqa: E402
_mxnet_aliases.apply()        # MXNet's other names for the ops above
