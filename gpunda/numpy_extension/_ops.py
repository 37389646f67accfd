"""``mx.npx`` operators: MXNet's neural-network and array-extension ops for
``mx.np.ndarray``, each a registered op called through the generated ``nd``/``sym``
function (so positional parameters, input names and Symbols work as in ``nd``/``sym``),
with ``mx.np.ndarray`` / np-Symbol results."""
from __future__ import annotations

from gpunda.numpy import _fast
from gpunda.numpy._helpers import call_op
from gpunda.numpy.multiarray import invoke_np

__all__ = ["activation", "arange_like", "batch_dot", "batch_flatten", "batch_norm", "cast",
           "convolution", "deconvolution", "dropout", "embedding", "erf", "erfinv",
           "fully_connected", "gamma", "gammaln", "gather_nd", "layer_norm", "leaky_relu",
           "log_softmax", "multibox_detection", "multibox_prior", "multibox_target",
           "one_hot", "pick", "pooling", "relu", "reshape_like", "rnn", "roi_pooling",
           "sequence_mask", "shape_array", "sigmoid", "slice", "smooth_l1", "softmax",
           "topk", "reshape", "nonzero", "constraint_check"]

# npx name -> registered op
_OPS = {
    "activation": "Activation", "arange_like": "_contrib_arange_like",
    "batch_dot": "batch_dot", "batch_flatten": "Flatten", "batch_norm": "BatchNorm",
    "cast": "Cast", "convolution": "Convolution", "deconvolution": "Deconvolution",
    "dropout": "Dropout", "embedding": "Embedding", "erf": "erf", "erfinv": "erfinv",
    "fully_connected": "FullyConnected", "gamma": "gamma", "gammaln": "gammaln",
    "gather_nd": "gather_nd", "layer_norm": "LayerNorm", "leaky_relu": "LeakyReLU",
    "log_softmax": "log_softmax", "multibox_detection": "_contrib_MultiBoxDetection",
    "multibox_prior": "_contrib_MultiBoxPrior", "multibox_target": "_contrib_MultiBoxTarget",
    "one_hot": "one_hot", "pick": "pick", "pooling": "Pooling", "relu": "relu",
    "reshape_like": "reshape_like", "rnn": "RNN", "roi_pooling": "ROIPooling",
    "sequence_mask": "SequenceMask", "shape_array": "shape_array", "sigmoid": "sigmoid",
    "slice": "slice", "smooth_l1": "smooth_l1", "softmax": "softmax", "topk": "topk",
}


def _drop_omitted_inputs(args):
    """Leading array arguments with the omitted ones (None: ``fully_connected(x, w, None,
    ...)`` without a bias) left out, then the positional parameters."""
    n = 0
    while n < len(args) and (args[n] is None or not isinstance(
            args[n], (int, float, str, bool, tuple, list))):
        n += 1
    if None not in args[:n]:
        return args
    return tuple(a for a in args[:n] if a is not None) + tuple(args[n:])


def _make(npx_name, opname):
    def fn(*args, **kwargs):
        return call_op(opname, _drop_omitted_inputs(args), kwargs, hint=npx_name)
    fn.__name__ = fn.__qualname__ = npx_name
    fn.__doc__ = f"``npx.{npx_name}``: the registered op ``{opname}`` on mx.np arrays."
    from gpunda.ops.registry import get_op
    op = get_op(opname)
    if op.default_params is not None and not op.variadic and len(op.inputs) == 1 \
            and op.fixed_nout == 1 and not op.wants_ctx and not op.mutates:
        fn = _fast.unary(opname, fn)      # npx.relu(x): inline (NOTE [np fast paths])
    return fn


for _name, _op_name in _OPS.items():
    globals()[_name] = _make(_name, _op_name)
del _name, _op_name


def reshape(a, newshape, reverse=False, order="C"):
    """Reshape with MXNet's codes: -1 infer, -2 copy an axis, -3 drop a size-1 axis, -4
    copy the remaining axes, -5 merge two axes, -6 split one axis into the next two."""
    if order != "C":
        raise NotImplementedError(f"npx.reshape: order={order!r} is not supported")
    if isinstance(newshape, int):
        newshape = (newshape,)
    return invoke_np("_npx_reshape", (a,), newshape=tuple(newshape), reverse=reverse)


def nonzero(a):
    """Indices of the non-zero elements of ``a``, shape (N, a.ndim), int64."""
    return invoke_np("_npx_nonzero", (a,))


def constraint_check(input, msg="Constraint violated."):  # noqa: A002 (MXNet's name)
    """A 0-d ``True`` when every element of the boolean array ``input`` is true; raises
    ValueError(msg) when one is not. In a graph, multiply a result by it (MXNet's idiom,
    ``x * npx.constraint_check(x > 0, msg)``) so the check runs with the graph."""
    return invoke_np("_npx_constraint_check", (input,), msg=msg)

