"""MXNet 1.9.1's other names for ops gpunda has (its ``.add_alias`` registrations).

Each entry names the op as gpunda registers it and the names MXNet 1.9.1 also
registers for the same operator (read from its op registry: a name whose op handle is
the canonical op's). ``apply()`` adds them to the registry after every family has
registered, so ``nd``, ``sym``, ``F`` and the JSON loader reach the op by any of them;
JSON still writes the canonical name, as MXNet's does.
"""
from __future__ import annotations

from gpunda.ops.registry import add_alias

__all__ = ["apply"]

# the legacy operator names (symbol arithmetic), the NumPy front end's internal names
# (_npi_*, _npx_*, _np_*) and the public ``cumsum``
_ALIASES = {
    "Activation": ("_npx_activation",),
    "BatchNorm": ("_npx_batch_norm",),
    "Cast": ("_npi_cast", "_npx_cast"),
    "Convolution": ("_npx_convolution",),
    "Custom": ("_npi_Custom",),
    "Deconvolution": ("_npx_deconvolution",),
    "Dropout": ("_npx_dropout",),
    "Embedding": ("_npx_embedding",),
    "Flatten": ("_npx_batch_flatten",),
    "FullyConnected": ("_npx_fully_connected",),
    "LayerNorm": ("_npx_layer_norm",),
    "LeakyReLU": ("_npx_leaky_relu",),
    "Pooling": ("_npx_pooling",),
    "RNN": ("_npx_rnn",),
    "ROIPooling": ("_npx_roi_pooling",),
    "SequenceMask": ("_npx_sequence_mask",),
    "_contrib_MultiBoxDetection": ("_npx_multibox_detection",),
    "_contrib_MultiBoxPrior": ("_npx_multibox_prior",),
    "_contrib_MultiBoxTarget": ("_npx_multibox_target",),
    "_contrib_arange_like": ("_npx_arange_like",),
    "_contrib_boolean_mask": ("_npi_boolean_mask",),
    "_copy": ("_np_copy",),        # MXNet's _np_copy is its own op, with _copy's semantics
    "_copyto": ("_npi_copyto",),
    "_cvimdecode": ("_npi_cvimdecode",),
    "_cvimread": ("_npi_cvimread",),
    "_cvimresize": ("_npi_cvimresize",),
    "_equal": ("_Equal",),
    "_equal_scalar": ("_EqualScalar",),
    "_greater": ("_Greater",),
    "_greater_equal": ("_Greater_Equal",),
    "_greater_equal_scalar": ("_GreaterEqualScalar",),
    "_greater_scalar": ("_GreaterScalar",),
    "_hypot": ("_Hypot",),
    "_lesser": ("_Lesser",),
    "_lesser_equal": ("_Lesser_Equal",),
    "_lesser_equal_scalar": ("_LesserEqualScalar",),
    "_lesser_scalar": ("_LesserScalar",),
    "_maximum": ("_Maximum",),
    "_minimum": ("_Minimum",),
    "_linalg_det": ("_npi_det",),
    "_linalg_inverse": ("_npi_inv",),
    "_linalg_slogdet": ("_npi_slogdet",),
    "_logical_and": ("_Logical_And",),
    "_logical_and_scalar": ("_LogicalAndScalar",),
    "_logical_or": ("_Logical_Or",),
    "_logical_or_scalar": ("_LogicalOrScalar",),
    "_logical_xor": ("_Logical_Xor",),
    "_logical_xor_scalar": ("_LogicalXorScalar",),
    "_mod": ("_Mod",),
    "_not_equal": ("_Not_Equal",),
    "_power": ("_Power",),
    "_not_equal_scalar": ("_NotEqualScalar",),
    "_np_any": ("_np_sometrue",),
    "_np_cumsum": ("cumsum",),
    "_np_max": ("_np_amax",),
    "_np_min": ("_np_amin",),
    "_np_prod": ("_np_product",),
    "_npx_reshape": ("_npi_reshape",),
    "_random_randint": ("_npi_random_randint",),
    "_scatter_set_nd": ("_npi_scatter_set_nd",),
    "_shuffle": ("_npi_shuffle",),
    "_slice_assign": ("_npi_slice_assign",),
    "_slice_assign_scalar": ("_npi_slice_assign_scalar",),
    "batch_dot": ("_npx_batch_dot",),
    "clip": ("_npi_clip",),
    "elemwise_add": ("_Plus",),
    "elemwise_div": ("_Div",),
    "elemwise_mul": ("_Mul",),
    "elemwise_sub": ("_Minus",),
    "erf": ("_npx_erf",),
    "erfinv": ("_npx_erfinv",),
    "gamma": ("_npx_gamma",),
    "gammaln": ("_npx_gammaln",),
    "gather_nd": ("_npi_gather_nd", "_npx_gather_nd"),
    "log_softmax": ("_npx_log_softmax",),
    "one_hot": ("_npx_one_hot",),
    "pick": ("_npx_pick",),
    "relu": ("_npx_relu",),
    "repeat": ("_np_repeat",),
    "reshape_like": ("_npx_reshape_like",),
    "shape_array": ("_npx_shape_array",),
    "sigmoid": ("_npx_sigmoid",),
    "slice": ("_npi_slice", "_npx_slice"),
    "smooth_l1": ("_npx_smooth_l1",),
    "softmax": ("_npx_softmax",),
    "topk": ("_npx_topk",),
}

# the ``_sparse_<name>`` registrations behind ``mx.nd.sparse`` / ``mx.sym.sparse``
_SPARSE = (
    ("ElementWiseSum", "add_n"), "Embedding", "FullyConnected", "LinearRegressionOutput",
    "LogisticRegressionOutput", "MAERegressionOutput", "_contrib_round_ste",
    "_contrib_sign_ste", "abs", "adam_update", "add_n", "arccos", "arccosh", "arcsin",
    "arcsinh", "arctan", "arctanh", "broadcast_add", "broadcast_div",
    ("broadcast_minus", "broadcast_sub"), "broadcast_mul",
    ("broadcast_plus", "broadcast_add"), "broadcast_sub", "cast_storage", "cbrt", "ceil",
    "clip", ("concat", "Concat"), "cos", "cosh", "degrees", "dot", "elemwise_add",
    "elemwise_div", "elemwise_mul", "elemwise_sub", "exp", "expm1", "fix", "floor",
    "ftrl_update", "gamma", "gammaln", "log", "log10", "log1p", "log2", "make_loss", "mean",
    "negative", "norm", "radians", "relu", "rint", "round", "rsqrt", "sgd_mom_update",
    "sgd_update", "sigmoid", "sign", "sin", "sinh", "slice", "sqrt", "square",
    ("stop_gradient", "BlockGrad"), "sum", "tan", "tanh", "trunc", "where", "zeros_like",
)


def apply():
    for name, aliases in _ALIASES.items():
        for alias in aliases:
            add_alias(alias, name)
    for entry in _SPARSE:
        short, name = entry if isinstance(entry, tuple) else (entry, entry)
        add_alias("_sparse_" + short, name)
