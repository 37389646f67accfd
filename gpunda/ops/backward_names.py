"""The names of MXNet 1.9.1's backward operators (``_backward_<op>``), which its
``nd._internal`` / ``sym._internal`` modules expose. gpunda registers gradients as rules
of the forward ops (autograd runs them), not as operators of their own, so these names
exist only to say so when called; see ``ndarray`` and ``symbol``, which install them.
"""
from __future__ import annotations

BACKWARD_OPS = (
    "_backward_Activation", "_backward_BatchNorm", "_backward_BatchNorm_v1",
    "_backward_BilinearSampler", "_backward_CachedOp", "_backward_Concat", "_backward_Convolution",
    "_backward_Convolution_v1", "_backward_Correlation", "_backward_Crop", "_backward_Custom",
    "_backward_CustomFunction", "_backward_Deconvolution", "_backward_Dropout",
    "_backward_Embedding", "_backward_FullyConnected", "_backward_GridGenerator",
    "_backward_GroupNorm", "_backward_IdentityAttachKLSparseReg", "_backward_InstanceNorm",
    "_backward_L2Normalization", "_backward_LRN", "_backward_LayerNorm", "_backward_LeakyReLU",
    "_backward_MakeLoss", "_backward_Pad", "_backward_Pooling", "_backward_Pooling_v1",
    "_backward_RNN", "_backward_ROIAlign", "_backward_ROIPooling", "_backward_RROIAlign",
    "_backward_SVMOutput", "_backward_SequenceLast", "_backward_SequenceMask",
    "_backward_SequenceReverse", "_backward_SliceChannel", "_backward_SoftmaxActivation",
    "_backward_SoftmaxOutput", "_backward_SparseEmbedding", "_backward_SpatialTransformer",
    "_backward_SwapAxis", "_backward_UpSampling", "_backward__CrossDeviceCopy",
    "_backward__NDArray", "_backward__Native", "_backward__contrib_DeformableConvolution",
    "_backward__contrib_DeformablePSROIPooling",
    "_backward__contrib_ModulatedDeformableConvolution", "_backward__contrib_MultiBoxDetection",
    "_backward__contrib_MultiBoxPrior", "_backward__contrib_MultiBoxTarget",
    "_backward__contrib_MultiProposal", "_backward__contrib_PSROIPooling",
    "_backward__contrib_Proposal", "_backward__contrib_SyncBatchNorm",
    "_backward__contrib_count_sketch", "_backward__contrib_fft", "_backward__contrib_ifft",
    "_backward_abs", "_backward_add", "_backward_amp_cast", "_backward_amp_multicast",
    "_backward_arccos", "_backward_arccosh", "_backward_arcsin", "_backward_arcsinh",
    "_backward_arctan", "_backward_arctanh", "_backward_backward_FullyConnected",
    "_backward_broadcast_add", "_backward_broadcast_div", "_backward_broadcast_exponential",
    "_backward_broadcast_gumbel", "_backward_broadcast_hypot", "_backward_broadcast_logistic",
    "_backward_broadcast_maximum", "_backward_broadcast_minimum", "_backward_broadcast_mod",
    "_backward_broadcast_mul", "_backward_broadcast_normal", "_backward_broadcast_pareto",
    "_backward_broadcast_power", "_backward_broadcast_rayleigh", "_backward_broadcast_sub",
    "_backward_broadcast_weibull", "_backward_cast", "_backward_cbrt", "_backward_clip",
    "_backward_col2im", "_backward_cond", "_backward_contrib_AdaptiveAvgPooling2D",
    "_backward_contrib_BatchNormWithReLU", "_backward_contrib_BilinearResize2D",
    "_backward_contrib_bipartite_matching", "_backward_contrib_boolean_mask",
    "_backward_contrib_box_iou", "_backward_contrib_box_nms", "_backward_copy", "_backward_cos",
    "_backward_cosh", "_backward_ctc_loss", "_backward_degrees", "_backward_diag", "_backward_div",
    "_backward_div_scalar", "_backward_dot", "_backward_erf", "_backward_erfinv",
    "_backward_expm1", "_backward_foreach", "_backward_gamma", "_backward_gammaln",
    "_backward_gather_nd", "_backward_hard_sigmoid", "_backward_hypot", "_backward_hypot_scalar",
    "_backward_im2col", "_backward_image_crop", "_backward_image_normalize",
    "_backward_interleaved_matmul_encdec_qk", "_backward_interleaved_matmul_encdec_valatt",
    "_backward_interleaved_matmul_selfatt_qk", "_backward_interleaved_matmul_selfatt_valatt",
    "_backward_linalg_det", "_backward_linalg_extractdiag", "_backward_linalg_extracttrian",
    "_backward_linalg_gelqf", "_backward_linalg_gemm", "_backward_linalg_gemm2",
    "_backward_linalg_inverse", "_backward_linalg_makediag", "_backward_linalg_maketrian",
    "_backward_linalg_potrf", "_backward_linalg_potri", "_backward_linalg_slogdet",
    "_backward_linalg_sumlogdiag", "_backward_linalg_syevd", "_backward_linalg_syrk",
    "_backward_linalg_trmm", "_backward_linalg_trsm", "_backward_linear_reg_out", "_backward_log",
    "_backward_log10", "_backward_log1p", "_backward_log2", "_backward_log_softmax",
    "_backward_logistic_reg_out", "_backward_mae_reg_out", "_backward_max", "_backward_maximum",
    "_backward_maximum_scalar", "_backward_mean", "_backward_min", "_backward_minimum",
    "_backward_minimum_scalar", "_backward_mod", "_backward_mod_scalar", "_backward_moments",
    "_backward_mul", "_backward_mul_scalar", "_backward_nanprod", "_backward_nansum",
    "_backward_norm", "_backward_np_average", "_backward_np_broadcast_to",
    "_backward_np_column_stack", "_backward_np_concat", "_backward_np_cumsum", "_backward_np_diag",
    "_backward_np_diagflat", "_backward_np_diagonal", "_backward_np_dot", "_backward_np_dstack",
    "_backward_np_hstack", "_backward_np_matmul", "_backward_np_max", "_backward_np_mean",
    "_backward_np_min", "_backward_np_prod", "_backward_np_sum", "_backward_np_trace",
    "_backward_np_vstack", "_backward_np_where", "_backward_np_where_lscalar",
    "_backward_np_where_rscalar", "_backward_npi_arctan2", "_backward_npi_arctan2_scalar",
    "_backward_npi_broadcast_add", "_backward_npi_broadcast_div", "_backward_npi_broadcast_mod",
    "_backward_npi_broadcast_mul", "_backward_npi_broadcast_power", "_backward_npi_broadcast_sub",
    "_backward_npi_copysign", "_backward_npi_copysign_scalar", "_backward_npi_diff",
    "_backward_npi_einsum", "_backward_npi_flip", "_backward_npi_hypot", "_backward_npi_ldexp",
    "_backward_npi_ldexp_scalar", "_backward_npi_norm", "_backward_npi_pad",
    "_backward_npi_rarctan2_scalar", "_backward_npi_rcopysign_scalar",
    "_backward_npi_rldexp_scalar", "_backward_npi_solve", "_backward_npi_svd",
    "_backward_npi_tensordot", "_backward_npi_tensordot_int_axes", "_backward_npi_tensorinv",
    "_backward_npi_tensorsolve", "_backward_pdf_dirichlet", "_backward_pdf_exponential",
    "_backward_pdf_gamma", "_backward_pdf_generalized_negative_binomial",
    "_backward_pdf_negative_binomial", "_backward_pdf_normal", "_backward_pdf_poisson",
    "_backward_pdf_uniform", "_backward_pick", "_backward_power", "_backward_power_scalar",
    "_backward_prod", "_backward_radians", "_backward_rcbrt", "_backward_rdiv_scalar",
    "_backward_reciprocal", "_backward_relu", "_backward_repeat", "_backward_reshape",
    "_backward_reverse", "_backward_rmod_scalar", "_backward_rpower_scalar", "_backward_rsqrt",
    "_backward_sample_multinomial", "_backward_sigmoid", "_backward_sign", "_backward_sin",
    "_backward_sinh", "_backward_slice", "_backward_slice_axis", "_backward_slice_like",
    "_backward_smooth_l1", "_backward_softmax", "_backward_softmax_cross_entropy",
    "_backward_softmin", "_backward_softsign", "_backward_sparse_retain", "_backward_sqrt",
    "_backward_square", "_backward_square_sum", "_backward_squeeze", "_backward_stack",
    "_backward_sub", "_backward_sum", "_backward_take", "_backward_tan", "_backward_tanh",
    "_backward_tile", "_backward_topk", "_backward_tril", "_backward_where",
    "_backward_while_loop",
    # backward ops MXNet names without the _backward_ prefix
    "_broadcast_backward", "_split_v2_backward",
)

# the same for mx.nd.np._internal / mx.sym.np._internal (MXNet's _npi_<name> backward ops)
NP_BACKWARD_OPS = ("backward_ediff1d", "backward_nan_to_num", "backward_polyval",
                   "hsplit_backward")

# ops that exist only inside MXNet's C++ library: MKL-DNN fused subgraphs its graph pass
# makes, and the nodes of a thread-safe CachedOp and of an autograd.Function
CPP_ONLY_OPS = {
    "_CachedOpThreadSafe": "it is the node of a thread-safe CachedOp, which MXNet's C API "
                           "creates (no parameters can build it); use _CachedOp "
                           "(mx.sym._internal._CachedOp(*inputs, subgraph=json)) or a "
                           "hybridized block",
    "_CustomFunction": "it is the tape node of an autograd.Function, which only "
                       "Function.__call__ creates; subclass mx.autograd.Function instead",
}

REASON = ("it is one of MXNet's internal backward operators; gpunda computes gradients with "
          "the forward op's gradient rule (autograd.backward / autograd.grad, "
          "Executor.backward), not by calling backward operators")


def add_stubs(namespace, module_name):
    """Give ``namespace`` (``nd._internal`` or ``sym._internal``) every name above that it does
    not have, each a stub that raises a GpundaError naming it and saying why."""
    from gpunda._core.not_built import stub_function
    for name in BACKWARD_OPS:
        if not hasattr(namespace, name):
            setattr(namespace, name, stub_function(module_name, name, REASON))
    for name, why in CPP_ONLY_OPS.items():
        if not hasattr(namespace, name):
            setattr(namespace, name, stub_function(module_name, name, why))


def add_np_stubs(namespace, module_name):
    """``add_stubs`` for ``mx.nd.np._internal`` (``mx.sym.np._internal`` reads its names)."""
    from gpunda._core.not_built import stub_function
    for name in NP_BACKWARD_OPS:
        if name not in vars(namespace):
            setattr(namespace, name, stub_function(module_name, name, REASON))
