"""Op hooks on a CachedOp (MXNet's ``MXCachedOpRegisterOpHook``, gluon's ``register_op_hook``).

A monitored call runs the plain plan keeping every slot, then reports, step by
step, each op input (with ``monitor_all``) and each output to the callback as
``(name, op_name, NDArray)``. Names are MXNet's: ``<node>_<input name>`` and
``<node>_<output name>``, where an op that MXNet registers without input names
(``FListInputNames``: most unary ops, Activation, ...) has inputs ``input0``,
``input1`` ... and one without output names has outputs ``0``, ``1`` ... (a
single output is ``output``). Names are bytes, as MXNet's C callback gives them.
"""
from __future__ import annotations

# MXNet 1.9.1 ops that register FListInputNames (read from src/operator at tag 1.9.1); the
# element-wise and broadcast binary ops (inputs lhs, rhs) register them through a macro
_NAMED_INPUTS = frozenset((
    "BatchNorm", "CTCLoss", "Concat", "Convolution", "CuDNNBatchNorm", "Custom",
    "Deconvolution", "Dropout", "Embedding", "FullyConnected", "GroupNorm", "LRN",
    "LayerNorm", "LeakyReLU", "Pooling", "RNN", "SoftmaxOutput", "UpSampling", "_TensorRT",
    "_cond", "_contrib_BatchNormWithReLU", "_contrib_BilinearResize2D", "_contrib_ROIAlign",
    "_contrib_RROIAlign", "_contrib_SparseEmbedding", "_contrib_allclose",
    "_contrib_boolean_mask", "_contrib_box_decode", "_contrib_box_encode", "_contrib_box_iou",
    "_contrib_calibrate_entropy", "_contrib_dequantize", "_contrib_dgl_adjacency",
    "_contrib_dgl_graph_compact", "_contrib_dgl_subgraph", "_contrib_edge_id",
    "_contrib_hawkesll", "_contrib_index_array", "_contrib_index_copy",
    "_contrib_interleaved_matmul_encdec_qk", "_contrib_interleaved_matmul_encdec_valatt",
    "_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt",
    "_contrib_intgemm_fully_connected", "_contrib_intgemm_maxabsolute",
    "_contrib_intgemm_prepare_data", "_contrib_intgemm_prepare_weight",
    "_contrib_intgemm_take_weight", "_contrib_quadratic", "_contrib_quantize",
    "_contrib_quantize_asym", "_contrib_quantize_v2", "_contrib_quantized_act",
    "_contrib_quantized_batch_norm", "_contrib_quantized_concat", "_contrib_quantized_conv",
    "_contrib_quantized_elemwise_add", "_contrib_quantized_elemwise_mul",
    "_contrib_quantized_embedding", "_contrib_quantized_flatten",
    "_contrib_quantized_fully_connected", "_contrib_quantized_pooling",
    "_contrib_quantized_rnn", "_contrib_requantize", "_contrib_tvm_dot",
    "_contrib_tvm_dot_fallback", "_contrib_tvm_vadd", "_foreach", "_histogram",
    "_identity_with_attr_like_rhs", "_image_normalize", "_image_to_tensor", "_linalg_det",
    "_linalg_extractdiag", "_linalg_extracttrian", "_linalg_gelqf", "_linalg_gemm",
    "_linalg_gemm2", "_linalg_inverse", "_linalg_makediag", "_linalg_maketrian",
    "_linalg_potrf", "_linalg_potri", "_linalg_slogdet", "_linalg_sumlogdiag",
    "_linalg_syevd", "_linalg_syrk", "_linalg_trmm", "_linalg_trsm", "_multi_adamw_update",
    "_multi_lamb_update", "_multi_mp_adamw_update", "_multi_mp_lamb_update", "_np_all",
    "_np_any", "_np_copy", "_np_cumsum", "_np_diag", "_np_diagflat", "_np_diagonal",
    "_np_dot", "_np_max", "_np_min", "_np_moveaxis", "_np_prod", "_np_reshape", "_np_roll",
    "_np_squeeze", "_np_sum", "_np_trace", "_np_transpose", "_npi_arctan2", "_npi_around",
    "_npi_average", "_npi_bernoulli", "_npi_bincount", "_npi_bitwise_and", "_npi_bitwise_not",
    "_npi_bitwise_or", "_npi_bitwise_xor", "_npi_boolean_mask_assign_scalar",
    "_npi_boolean_mask_assign_tensor", "_npi_broadcast_to", "_npi_choice", "_npi_cholesky",
    "_npi_column_stack", "_npi_concatenate", "_npi_deg2rad", "_npi_delete",
    "_npi_diag_indices_from", "_npi_diff", "_npi_dsplit", "_npi_dstack", "_npi_ediff1d",
    "_npi_eig", "_npi_eigh", "_npi_eigvals", "_npi_eigvalsh", "_npi_einsum",
    "_npi_exponential", "_npi_flip", "_npi_full_like", "_npi_gamma", "_npi_hsplit",
    "_npi_hstack", "_npi_hypot", "_npi_insert_scalar", "_npi_insert_slice",
    "_npi_insert_tensor", "_npi_lcm", "_npi_log", "_npi_matmul", "_npi_mean",
    "_npi_nan_to_num", "_npi_normal", "_npi_normal_n", "_npi_pad", "_npi_pareto",
    "_npi_percentile", "_npi_pinv", "_npi_pinv_scalar_rcond", "_npi_polyval", "_npi_powerd",
    "_npi_rad2deg", "_npi_rayleigh", "_npi_rot90", "_npi_share_memory", "_npi_solve",
    "_npi_stack", "_npi_std", "_npi_svd", "_npi_tensordot", "_npi_tensordot_int_axes",
    "_npi_tensorinv", "_npi_tensorsolve", "_npi_tril", "_npi_true_divide", "_npi_uniform",
    "_npi_uniform_n", "_npi_unique", "_npi_var", "_npi_vstack", "_npi_weibull", "_npi_where",
    "_npi_where_lscalar", "_npi_where_rscalar", "_npi_where_scalar2", "_npx_constraint_check",
    "_npx_nonzero", "_npx_reshape", "_ravel_multi_index", "_rnn_param_concat",
    "_scatter_set_nd", "_sg_mkldnn_conv", "_sg_mkldnn_fully_connected",
    "_sg_mkldnn_selfatt_qk", "_sg_mkldnn_selfatt_valatt", "_slice_assign", "_sparse_retain",
    "_split_v2", "_unravel_index", "_while_loop", "add_n", "all_finite", "amp_multicast",
    "batch_dot", "batch_take", "broadcast_like", "col2im", "depth_to_space", "diag", "dot",
    "gather_nd", "im2col", "khatri_rao", "log_softmax", "moments", "multi_all_finite",
    "multi_lars", "multi_mp_sgd_mom_update", "multi_mp_sgd_update", "multi_sgd_mom_update",
    "multi_sgd_update", "multi_sum_sq", "name", "one_hot", "pick",
    "preloaded_multi_mp_sgd_mom_update", "preloaded_multi_mp_sgd_update",
    "preloaded_multi_sgd_mom_update", "preloaded_multi_sgd_update", "repeat", "reset_arrays",
    "reshape_like", "reverse", "scatter_nd", "slice_like", "softmax", "softmax_cross_entropy",
    "space_to_depth", "squeeze", "stack", "take", "tile", "where"))


def step_names(steps):
    """Per step: (input names, output names) as the callback receives them."""
    names = []
    for st in steps:
        ins = []
        if st.op.name in _NAMED_INPUTS or st.op.inputs == ("lhs", "rhs"):
            try:
                ins = list(st.op.input_names(st.p))
            except Exception:           # noqa: BLE001 (variadic ops whose names need p)
                ins = []
        ins = ins[:len(st.ins)] + [f"input{i}" for i in range(len(ins), len(st.ins))]
        outs = st.op.output_names
        outs = outs(st.p) if callable(outs) else outs
        if not outs or len(outs) < st.nout:
            outs = ["output"] if st.nout == 1 else [str(i) for i in range(st.nout)]
        names.append(([f"{st.name}_{n}".encode() for n in ins],
                      [f"{st.name}_{n}".encode() for n in outs[:st.nout]]))
    return names


def report(steps, monitor, vals, ctx):
    """Call the monitor's callback for every step of one run (slot values ``vals``)."""
    from gpunda.ndarray.ndarray import _new
    callback, monitor_all, names = monitor
    for st, (in_names, out_names) in zip(steps, names):
        opname = st.op.name.encode()
        if monitor_all:
            for nm, s in zip(in_names, st.ins):
                if vals[s] is not None:
                    callback(nm, opname, _new(vals[s], ctx))
        for nm, s in zip(out_names, st.outs):
            if vals[s] is not None:
                callback(nm, opname, _new(vals[s], ctx))
