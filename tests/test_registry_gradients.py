"""Every registered op's gradient against central finite differences (float64).

One test per op (pytest id = op name), walking ``gpunda.ops.registry.all_ops()``
at collection time, so a new op is checked as soon as it is registered. Only
ops declared ``nondiff=True`` are left out. The scalar checked is
``sum_k sum(out_k * h_k)`` over the float visible outputs, with fixed random
``h_k``; its gradient from ``autograd.grad`` (plain, and with
``create_graph=True``) must match central differences. ``test_second_order``
does the same one level up: the derivative of ``sum(v * grad)`` from a
recorded backward against central differences of first-order gradients.

Inputs: by default one or two float64 arrays of shape (2, 3) in [0.5, 1.5]
(one per declared input). Ops that need other inputs or params have an entry
in ``SPECS``. Hidden helper ops (used by gradient rules) without an entry take
the inputs and params with which a public op's gradient called them
(``_captured()``). ``python tests/test_registry_gradients.py`` lists the ops
without an entry and how each fares.
"""
from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

import gpunda as mx
from gpunda._engine import autograd as ag   # the engine module: a test spies on its _record
from gpunda.ops.registry import all_ops
from gpunda.test_utils import assert_almost_equal

nd = mx.nd


class _Cube(mx.operator.CustomOp):
    """A custom op for the Custom entry: out = a**3 * b, its gradient written by hand."""

    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * a * a * b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        self.assign(in_grad[0], req[0], 3 * a * a * b * out_grad[0])
        self.assign(in_grad[1], req[1], a * a * a * out_grad[0])


@mx.operator.register("_registry_test_cube")
class _CubeProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["a", "b"]

    def create_operator(self, ctx, shapes, dtypes):
        return _Cube()

# --------------------------------------------------------------------------
# input generators


def U(*shape, lo=0.5, hi=1.5):
    """Uniform float64 values in [lo, hi)."""
    return ("u", shape, lo, hi)


def I(*shape, hi=3, dtype="float64"):  # noqa: E743
    """Integer values in [0, hi) (indices, labels); never differentiated."""
    return ("i", shape, hi, dtype)


def K(values, dtype="float64", diff=False):
    """Fixed values; differentiated only with ``diff=True``."""
    return ("k", np.asarray(values), dtype, diff)


def G(fn, diff=True):
    """Values made by ``fn(rng)`` (matrices with structure: SPD, triangular...)."""
    return ("g", fn, diff)


def _spd(n, batch=()):
    def make(rng):
        m = rng.uniform(-1, 1, batch + (n, n))
        return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)
    return make


def _separated_sym(n):
    def make(rng):
        q, _ = np.linalg.qr(rng.uniform(-1, 1, (n, n)))
        return q @ np.diag(np.arange(1.0, n + 1) * 1.5) @ q.T
    return make


def _lower(n):
    def make(rng):
        return np.tril(rng.uniform(0.5, 1.5, (n, n))) + np.eye(n)
    return make


# Entry keys:
#   inputs  list of generators (U, I, K), one per input
#   params  op params
#   wrt     indices of inputs to differentiate (default: float inputs from U/K(diff)
#           that are not mutated/aux and not named index/indices/label/condition)
#   train   forward in training mode (default True, as MXNet's check_numeric_gradient)
#   zero    the gradient is zero by definition (BlockGrad)
#   skip    a reason this op's gradient is not a derivative of its forward
#   second  False, or a reason, to leave the op out of test_second_order
#   pre     f(list of NDArrays) -> NDArrays fed to the op (recorded, e.g. symmetrising a
#           matrix for ops that read one triangle)
#   rtol/atol/eps
_PM = dict(lo=-1.5, hi=1.5)
_LOSS_OUT = ("loss output layer: its backward is the loss gradient (pred - label) by MXNet's "
             "definition, not the derivative of its forward (tested with the nn ops)")
_MAKE_LOSS = ("the input is the loss: the backward ignores the head gradient by MXNet's "
              "definition (tested in tests/ops/test_nn.py)")
SPECS = {
    # elemwise
    "arcsin": dict(inputs=[U(2, 3, lo=-0.8, hi=0.8)]),
    "arccos": dict(inputs=[U(2, 3, lo=-0.8, hi=0.8)]),
    "arctanh": dict(inputs=[U(2, 3, lo=-0.8, hi=0.8)]),
    "arccosh": dict(inputs=[U(2, 3, lo=1.2, hi=2.0)]),
    "erfinv": dict(inputs=[U(2, 3, lo=-0.8, hi=0.8)]),
    "relu": dict(inputs=[U(2, 3, **_PM)]),
    "abs": dict(inputs=[U(2, 3, **_PM)]),
    "sign": dict(inputs=[U(2, 3, **_PM)]),
    "softsign": dict(inputs=[U(2, 3, **_PM)]),
    "Cast": dict(params={"dtype": "float64"}),
    "clip": dict(params={"a_min": 0.7, "a_max": 1.3}),
    "_power_scalar": dict(params={"scalar": 2.5}),
    "_rpower_scalar": dict(params={"scalar": 2.5}),
    "_rdiv_scalar": dict(params={"scalar": 2.0}),
    "_rmod_scalar": dict(params={"scalar": 2.5}),
    "_mod_scalar": dict(params={"scalar": 0.7}),
    "_maximum_scalar": dict(params={"scalar": 1.0}),
    "_minimum_scalar": dict(params={"scalar": 1.0}),
    "_polygamma": dict(params={"n": 1}),
    "smooth_l1": dict(inputs=[U(2, 3, **_PM)], params={"scalar": 1.2}),
    "add_n": dict(inputs=[U(2, 3), U(2, 3), U(2, 3)], params={"num_args": 3}),
    "_split_v2": dict(inputs=[U(2, 5)], params={"indices": (0, 1, 3), "axis": 1}),
    "_npi_hsplit": dict(inputs=[U(2, 5)], params={"indices": (0, 1, 3)}),
    "_npi_dsplit": dict(inputs=[U(2, 1, 4)], params={"indices": (0, 0), "sections": 2}),
    "broadcast_add": dict(inputs=[U(2, 3), U(1, 3)]),
    "broadcast_sub": dict(inputs=[U(2, 3), U(2, 1)]),
    "broadcast_mul": dict(inputs=[U(1, 3), U(2, 3)]),
    "broadcast_div": dict(inputs=[U(2, 3), U(3)]),
    "broadcast_power": dict(inputs=[U(2, 3), U(1, 3)]),
    "broadcast_mod": dict(inputs=[U(2, 3, lo=2.0, hi=3.0), U(2, 3, lo=0.6, hi=0.9)]),
    "broadcast_maximum": dict(inputs=[U(2, 3), U(2, 3)]),
    "_sum_to": dict(inputs=[U(2, 3)], params={"shape": (1, 3)}),
    "_broadcast_back": dict(inputs=[U(1, 3)], params={"like_shape": (2, 3)}),
    "BlockGrad": dict(zero=True),
    "zeros_like": dict(zero=True),
    "ones_like": dict(zero=True),
    # matrix / indexing / reduce
    "Reshape": dict(params={"shape": (3, 2)}),
    "broadcast_to": dict(inputs=[U(1, 3)], params={"shape": (2, 3)}),
    "broadcast_axis": dict(inputs=[U(1, 3)], params={"axis": 0, "size": 2}),
    "broadcast_like": dict(inputs=[U(1, 3), U(2, 3)]),
    "expand_dims": dict(params={"axis": 1}),
    "repeat": dict(params={"repeats": 2, "axis": 1}),
    "reverse": dict(params={"axis": 1}),
    "tile": dict(params={"reps": (2, 1)}),
    "slice": dict(params={"begin": (0, 1), "end": (2, 3)}),
    "_slice_assign": dict(inputs=[U(3, 4), U(2, 2)], params={"begin": (0, 1), "end": (2, 3)}),
    "_slice_assign_scalar": dict(inputs=[U(3, 4)],
                                 params={"scalar": 2.0, "begin": (1, None), "end": (3, None)}),
    "slice_axis": dict(params={"axis": 1, "begin": 0, "end": 2}),
    "slice_like": dict(inputs=[U(2, 3), U(2, 2)]),
    "SliceChannel": dict(inputs=[U(2, 3)], params={"num_outputs": 3, "axis": 1}),
    "SwapAxis": dict(params={"dim1": 0, "dim2": 1}),
    "Flatten": dict(inputs=[U(2, 3, 2)]),
    "squeeze": dict(inputs=[U(2, 1, 3)]),
    "Concat": dict(inputs=[U(2, 3), U(2, 2)], params={"num_args": 2, "dim": 1}),
    "stack": dict(inputs=[U(2, 3), U(2, 3)], params={"num_args": 2, "axis": 1}),
    "depth_to_space": dict(inputs=[U(1, 4, 2, 3)], params={"block_size": 2}),
    "space_to_depth": dict(inputs=[U(1, 1, 4, 6)], params={"block_size": 2}),
    "Pad": dict(inputs=[U(1, 1, 2, 3)], params={"mode": "constant", "constant_value": 0.5,
                                                "pad_width": (0, 0, 0, 0, 1, 1, 2, 2)}),
    "dot": dict(inputs=[U(2, 3), U(3, 4)]),
    "batch_dot": dict(inputs=[U(2, 2, 3), U(2, 3, 4)]),
    "khatri_rao": dict(inputs=[U(2, 3), U(4, 3)], params={"num_args": 2}),
    "diag": dict(inputs=[U(3, 3)]),
    "take": dict(inputs=[U(4, 3), K([[0, 3], [2, 1]])]),
    "pick": dict(inputs=[U(2, 3), K([2, 0])]),
    "gather_nd": dict(inputs=[U(3, 4), K([[0, 2], [1, 3]])]),
    "scatter_nd": dict(inputs=[U(2), K([[0, 1], [1, 2]])], params={"shape": (2, 3)}),
    "where": dict(inputs=[K([[1, 0, 1], [0, 1, 0]]), U(2, 3), U(2, 3)]),
    "topk": dict(params={"k": 2, "ret_typ": "value"}),
    "cast_storage": dict(params={"stype": "default"}),
    "_copyto": dict(params={"ctx": mx.cpu(0)}),
    "_getitem": dict(inputs=[U(3, 4)], params={"key": (slice(0, 2), slice(1, 3))}),
    "softmax_cross_entropy": dict(inputs=[U(2, 3), K([2, 0])]),
    "_softmax_ce_loss": dict(inputs=[U(3, 4), K([2, 0, 5])]),     # 5: clipped to class 3
    "fill_element_0index": dict(inputs=[U(2, 3), U(2), K([2, 0])]),
    "_contrib_boolean_mask": dict(inputs=[U(3, 2), K([1, 0, 1])]),
    "_contrib_index_copy": dict(inputs=[U(3, 2), K([2, 0]), U(2, 2)]),
    "_contrib_backward_quadratic": dict(params={"a": 1.5, "b": -0.5, "c": 2.0}),
    "_contrib_backward_gradientmultiplier": dict(params={"scalar": 2.5}),
    "_contrib_backward_index_copy": dict(inputs=[U(3, 2), U(3, 2), K([2, 0]), U(2, 2)],
                                         wrt=[0]),
    # random_pdf: params match the sample's leftmost dims; discrete samples stay fixed
    # (their density has no gradient wrt the sample, by MXNet's definition)
    "_random_pdf_uniform": dict(inputs=[U(2, 3, 2), U(2, 3, lo=0.0, hi=0.4), U(2, 3)]),
    "_random_pdf_normal": dict(inputs=[U(2, 3, 2, **_PM), U(2, 3, **_PM), U(2, 3)]),
    "_random_pdf_gamma": dict(inputs=[U(2, 3, 2), U(2, 3, lo=1.5, hi=2.5), U(2, 3)]),
    "_random_pdf_exponential": dict(inputs=[U(2, 3, 2), U(2, 3)]),
    "_random_pdf_poisson": dict(inputs=[K([[0, 1, 2], [3, 1, 4]]), U(2, 3)]),
    "_random_pdf_negative_binomial": dict(inputs=[K([[0, 1, 2], [3, 1, 4]]), U(2, 3),
                                                  U(2, 3, lo=0.2, hi=0.8)]),
    "_random_pdf_generalized_negative_binomial": dict(inputs=[K([[0, 1, 2], [3, 1, 4]]),
                                                              U(2, 3), U(2, 3)]),
    "_random_pdf_dirichlet": dict(inputs=[U(2, 4, 3, lo=0.1, hi=0.5), U(2, 3)]),
    "_contrib_ifft": dict(inputs=[U(2, 6)]),
    "_contrib_count_sketch": dict(inputs=[U(3, 4), K([[0, 2, 2, 1]]), K([[1, -1, 1, 1]])],
                                  params={"out_dim": 3}),
    # contrib_nlp
    "_contrib_interleaved_matmul_selfatt_qk": dict(inputs=[U(3, 2, 12)], params={"heads": 2}),
    "_contrib_interleaved_matmul_selfatt_valatt": dict(inputs=[U(3, 2, 12), U(4, 3, 3)],
                                                       params={"heads": 2}),
    "_contrib_interleaved_matmul_encdec_qk": dict(inputs=[U(3, 2, 4), U(5, 2, 8)],
                                                  params={"heads": 2}),
    "_contrib_interleaved_matmul_encdec_valatt": dict(inputs=[U(5, 2, 8), U(4, 3, 5)],
                                                      params={"heads": 2}),
    "_contrib_quadratic": dict(params={"a": 0.7, "b": -0.3, "c": 2.0}),
    "_contrib_gradientmultiplier": dict(
        params={"scalar": 2.5}, skip="scales the gradient by MXNet's definition (test_contrib_nlp)"),
    "_contrib_round_ste": dict(skip="straight-through estimator: identity gradient by "
                                    "definition (tests/ops/test_contrib_nlp.py)"),
    "_contrib_sign_ste": dict(skip="straight-through estimator: identity gradient by "
                                   "definition (tests/ops/test_contrib_nlp.py)"),
    "_sparse_retain": dict(inputs=[U(4, 3), K([0, 2])],
                           pre=lambda xs: [xs[0].tostype("row_sparse"), xs[1]]),
    "_embedding_weight_grad": dict(wrt=[1]),
    "_embedding_rsp_grad": dict(wrt=[1]),
    # linalg (names as registered; aliases linalg_*)
    "_linalg_det": dict(inputs=[G(_spd(3))]),
    "_linalg_slogdet": dict(inputs=[G(_spd(3))]),
    "_linalg_inverse": dict(inputs=[G(_spd(3))]),
    "_linalg_potrf": dict(inputs=[G(_spd(3))], pre=lambda xs: [(xs[0] + xs[0].T) * 0.5]),
    # well separated eigenvalues: eigenvectors are smooth functions of A there
    "_linalg_syevd": dict(inputs=[G(_separated_sym(3))],
                          pre=lambda xs: [(xs[0] + xs[0].T) * 0.5]),
    "_npi_cholesky": dict(inputs=[G(_spd(3))], pre=lambda xs: [(xs[0] + xs[0].T) * 0.5]),
    # MXNet 1.9.1 gives eigh/eigvalsh a zero gradient
    "_npi_eigh": dict(inputs=[G(_separated_sym(3))], zero=True),
    "_npi_eigvalsh": dict(inputs=[G(_separated_sym(3))], zero=True),
    "_linalg_gelqf": dict(inputs=[U(2, 3)]),
    "_linalg_potri": dict(inputs=[G(_lower(3))]),
    "_linalg_sumlogdiag": dict(inputs=[G(_spd(3))]),
    "_linalg_extractdiag": dict(inputs=[U(3, 3)]),
    "_linalg_extracttrian": dict(inputs=[U(3, 3)]),
    "_linalg_makediag": dict(inputs=[U(3)]),
    "_linalg_maketrian": dict(inputs=[U(6)]),
    "_linalg_gemm": dict(inputs=[U(2, 3), U(3, 4), U(2, 4)], params={"alpha": 0.7, "beta": 1.3}),
    "_linalg_gemm2": dict(inputs=[U(2, 3), U(3, 4)], params={"alpha": 0.7}),
    "_linalg_syrk": dict(inputs=[U(2, 3)], params={"alpha": 0.7}),
    "_linalg_trmm": dict(inputs=[G(_lower(3)), U(3, 2)], params={"alpha": 0.7}),
    "_linalg_trsm": dict(inputs=[G(_lower(3)), U(3, 2)], params={"alpha": 0.7}),
    # nn
    "Activation": dict(params={"act_type": "tanh"}),
    "LeakyReLU": dict(inputs=[U(2, 3, **_PM)], params={"act_type": "leaky", "slope": 0.3}),
    # with use_length (the plain form is checked in tests/ops/test_nn.py)
    "softmax": dict(inputs=[U(3, 4, **_PM), K([2, 4, 1])],
                    params={"axis": 1, "use_length": True, "temperature": 1.5}),
    "log_softmax": dict(inputs=[U(3, 4, **_PM), K([2, 4, 1])],
                        params={"axis": 1, "use_length": True}),
    "softmin": dict(inputs=[U(3, 4, **_PM)], params={"axis": 1, "temperature": 2.0}),
    "FullyConnected": dict(inputs=[U(2, 3), U(4, 3), U(4)], params={"num_hidden": 4}),
    "Convolution": dict(inputs=[U(1, 2, 4, 4), U(3, 2, 2, 2), U(3)],
                        params={"kernel": (2, 2), "num_filter": 3}),
    "Deconvolution": dict(inputs=[U(1, 2, 3, 3), U(2, 1, 2, 2)],
                          params={"kernel": (2, 2), "num_filter": 1, "no_bias": True}),
    "Pooling": dict(inputs=[U(1, 1, 4, 4)], params={"kernel": (2, 2), "stride": (2, 2),
                                                    "pool_type": "max"}),
    "UpSampling": dict(inputs=[U(1, 1, 2, 2)], params={"scale": 2, "sample_type": "nearest",
                                                       "num_args": 1}),
    "BatchNorm": dict(inputs=[U(2, 3, 2), U(3), U(3), U(3), U(3)], params={"fix_gamma": False}),
    "_contrib_BatchNormWithReLU": dict(inputs=[U(2, 3, 2), U(3), U(3), U(3), U(3)],
                                       params={"fix_gamma": False}),
    "LayerNorm": dict(inputs=[U(2, 3), U(3), U(3)]),
    "_bias_add": dict(inputs=[U(2, 3, 4), U(3)], params={"axis": 1}),
    "InstanceNorm": dict(inputs=[U(2, 3, 4), U(3), U(3)]),
    "Crop": dict(inputs=[U(1, 2, 4, 5)], params={"num_args": 1, "h_w": (2, 3),
                                                 "offset": (1, 2)}),
    "im2col": dict(inputs=[U(1, 2, 3, 4)], params={"kernel": (2, 2), "pad": (1, 0)}),
    "col2im": dict(inputs=[U(1, 8, 12)], params={"output_size": (3, 4), "kernel": (2, 2),
                                               "pad": (1, 0)}),
    "GroupNorm": dict(inputs=[U(2, 4, 3), U(2), U(2)], params={"num_groups": 2}),
    "L2Normalization": dict(inputs=[U(2, 3, 2)]),
    "LRN": dict(inputs=[U(1, 5, 2, 2)], params={"nsize": 3, "alpha": 0.5}),
    "hard_sigmoid": dict(inputs=[U(2, 3, lo=-4.0, hi=4.0)], params={"alpha": 0.3}),
    "SVMOutput": dict(inputs=[U(2, 3), K([2, 0])], skip=_LOSS_OUT),
    "amp_cast": dict(params={"dtype": "float64"}),
    "amp_multicast": dict(inputs=[U(2, 3), U(2, 3)], params={"num_outputs": 2}),
    "Embedding": dict(inputs=[I(2, 3, hi=4), U(4, 5)], params={"input_dim": 4, "output_dim": 5}),
    "Dropout": dict(params={"p": 0.5}),
    "SoftmaxOutput": dict(inputs=[U(2, 3), K([2, 0])], skip=_LOSS_OUT),
    "LinearRegressionOutput": dict(inputs=[U(2, 3), U(2, 3)], skip=_LOSS_OUT),
    "LogisticRegressionOutput": dict(inputs=[U(2, 3), U(2, 3)], skip=_LOSS_OUT),
    "MAERegressionOutput": dict(inputs=[U(2, 3), U(2, 3)], skip=_LOSS_OUT),
    "MakeLoss": dict(skip=_MAKE_LOSS),
    "SequenceMask": dict(inputs=[U(3, 2, 2), K([3, 1])],
                         params={"use_sequence_length": True, "value": -1.0}),
    "SequenceLast": dict(inputs=[U(2, 3, 2), K([1, 2])],
                         params={"use_sequence_length": True, "axis": 1}),
    "SequenceReverse": dict(inputs=[U(3, 2, 2), K([2, 3])], params={"use_sequence_length": True}),
    "_sequence_last_scatter": dict(inputs=[U(2, 2), K([2, 3])],
                                   params={"use_sequence_length": True, "length": 3}),
    "RNN": dict(inputs=[U(3, 2, 2, lo=-1, hi=1), U(48, lo=-0.5, hi=0.5), U(1, 2, 2), U(1, 2, 2)],
                params={"state_size": 2, "num_layers": 1, "mode": "lstm", "state_outputs": True},
                second="MXNet 1.9.1 registers no FGradient for _backward_RNN: a second order "
                       "raises its error (tests/ops/test_rnn.py)"),
    "ROIPooling": dict(inputs=[U(1, 2, 6, 6), K([[0, 0, 0, 4, 4], [0, 1.2, 2.4, 5, 5.4]])],
                       params={"pooled_size": (2, 2), "spatial_scale": 1.0}),
    "_contrib_ROIAlign": dict(inputs=[U(2, 2, 5, 5), K([[0, 0.5, 0.7, 3.2, 3.9],
                                                         [1, 1.1, 0.2, 4.0, 3.5]])],
                              params={"pooled_size": (2, 2), "spatial_scale": 1.0}),
    "_contrib_PSROIPooling": dict(inputs=[U(1, 8, 6, 6), K([[0, 1, 2, 9, 10]])],
                                  params={"spatial_scale": 0.5, "output_dim": 2,
                                          "pooled_size": 2}),
    # detection (tests/ops/test_detection.py): box_nms moves rows, the others back-propagate
    # zeros by MXNet's definition and the legacy ones are float32 only
    "_contrib_box_nms": dict(inputs=[K([[[0, 0.9, 0.1, 0.1, 0.5, 0.5], [0, 0.8, 0.12, 0.1, 0.5, 0.52],
                                         [1, 0.7, 0.6, 0.6, 0.9, 0.95], [1, 0.3, 0.0, 0.6, 0.3, 0.9],
                                         [0, 0.05, 0.2, 0.2, 0.4, 0.4]]], diff=True)],
                             params={"overlap_thresh": 0.5, "valid_thresh": 0.1, "id_index": 0}),
    "_contrib_box_iou": dict(inputs=[K([[0.1, 0.1, 0.5, 0.6], [0.3, 0.2, 0.9, 0.7]], diff=True),
                                     K([[0.2, 0.3, 0.6, 0.8]], diff=True)], zero=True),
    "_contrib_bipartite_matching": dict(inputs=[K([[0.5, 0.6, 0.1], [0.1, 0.2, 0.9]], diff=True)],
                                        params={"threshold": 0.15}, zero=True),
    "_contrib_box_encode": dict(inputs=[K([[1, 0, 1]], diff=True), K([[0, 1, 1]], diff=True),
                                        K([[[0.1, 0.1, 0.4, 0.5], [0.2, 0.3, 0.6, 0.9],
                                            [0.5, 0.5, 0.8, 0.7]]], diff=True),
                                        K([[[0.1, 0.2, 0.5, 0.5], [0.4, 0.4, 0.9, 0.8]]], diff=True),
                                        K([0.0, 0.1, 0.0, 0.1], diff=True),
                                        K([0.1, 0.1, 0.2, 0.2], diff=True)], zero=True),
    "_contrib_box_decode": dict(inputs=[K([[[0.1, -0.2, 0.3, 0.1], [0.5, 0.2, -0.4, 0.2]]], diff=True),
                                        K([[[0.1, 0.1, 0.4, 0.5], [0.2, 0.3, 0.6, 0.9]]], diff=True)],
                                params={"format": "corner"}, zero=True),
    "_contrib_MultiBoxPrior": dict(inputs=[K(np.zeros((1, 2, 3, 3)), "float32", diff=True)],
                                   params={"sizes": (0.5, 0.3), "ratios": (1, 2)}, zero=True),
    "_contrib_MultiBoxTarget": dict(
        inputs=[K([[[0.1, 0.1, 0.4, 0.5], [0.2, 0.3, 0.6, 0.9], [0.5, 0.5, 0.8, 0.7]]], "float32",
                  diff=True),
                K([[[0, 0.1, 0.2, 0.5, 0.5], [-1, -1, -1, -1, -1]]], "float32"),
                K([[[0.2, 0.5, 0.1], [0.8, 0.5, 0.9]]], "float32", diff=True)], zero=True),
    "_contrib_MultiBoxDetection": dict(
        inputs=[K([[[0.2, 0.5, 0.1], [0.7, 0.1, 0.8], [0.1, 0.4, 0.1]]], "float32", diff=True),
                K([[0.1, 0.2, 0.1, -0.1, 0.0, 0.1, 0.2, 0.3, -0.2, 0.1, 0.0, 0.0]], "float32",
                  diff=True),
                K([[[0.1, 0.1, 0.4, 0.5], [0.2, 0.3, 0.6, 0.9], [0.5, 0.5, 0.8, 0.7]]], "float32",
                  diff=True)], zero=True),
    "_contrib_Proposal": dict(inputs=[K(np.linspace(0.1, 0.9, 18).reshape(1, 2, 3, 3), "float32",
                                        diff=True),
                                      K(np.linspace(-0.2, 0.2, 36).reshape(1, 4, 3, 3), "float32",
                                        diff=True),
                                      K([[40, 44, 1.0]], "float32", diff=True)],
                              params={"scales": (2,), "ratios": (1,), "rpn_pre_nms_top_n": 6,
                                      "rpn_post_nms_top_n": 3, "rpn_min_size": 1,
                                      "output_score": True}, zero=True),
    "_contrib_MultiProposal": dict(inputs=[K(np.linspace(0.1, 0.9, 36).reshape(2, 2, 3, 3),
                                             "float32", diff=True),
                                           K(np.linspace(-0.2, 0.2, 72).reshape(2, 4, 3, 3),
                                             "float32", diff=True),
                                           K([[40, 44, 1.0], [48, 30, 0.8]], "float32", diff=True)],
                                   params={"scales": (2,), "ratios": (1,), "rpn_pre_nms_top_n": 6,
                                           "rpn_post_nms_top_n": 3, "rpn_min_size": 1},
                                   zero=True),
    "_contrib_RROIAlign": dict(skip="MXNet's gradient for RROIAlign raises when run; so does "
                                    "gpunda's (tests/ops/test_detection.py)"),
    "_contrib_BilinearResize2D": dict(inputs=[U(1, 2, 3, 4)], params={"height": 5, "width": 3}),
    "_contrib_AdaptiveAvgPooling2D": dict(inputs=[U(1, 2, 5, 7)], params={"output_size": (2, 3)}),
    "GridGenerator": dict(inputs=[U(2, 6)], params={"transform_type": "affine",
                                                    "target_shape": (3, 4)}),
    "BilinearSampler": dict(inputs=[U(1, 2, 4, 5), U(1, 2, 3, 3, lo=-0.9, hi=0.9)],
                            second="MXNet 1.9.1 registers no FGradient for its backward: a "
                                   "second order raises its error"),
    "_backward_BilinearSampler": dict(skip="BilinearSampler's backward kernel: "
                                           "raises MXNet's no-FGradient error"),
    "SpatialTransformer": dict(inputs=[U(1, 2, 4, 5), K([[0.8, 0.1, 0.05, -0.1, 0.9, 0.02]],
                                                         diff=True)],
                               params={"target_shape": (3, 3), "transform_type": "affine",
                                       "sampler_type": "bilinear"},
                               second="raises MXNet's error (BilinearSampler's backward)"),
    "Correlation": dict(inputs=[U(1, 2, 5, 5), U(1, 2, 5, 5)],
                        params={"kernel_size": 3, "max_displacement": 1, "pad_size": 2,
                                "stride1": 2},
                        second="MXNet 1.9.1 has no FGradient for its backward: raises its error"),
    "_backward_Correlation": dict(skip="Correlation's backward kernel: once-differentiable, "
                                       "its gradient raises"),
    "_contrib_DeformableConvolution": dict(
        inputs=[U(1, 4, 4, 5), U(1, 2 * 2 * 4, 4, 5, lo=0.1, hi=0.9), U(2, 2, 2, 2), U(2)],
        params={"kernel": (2, 2), "pad": (1, 1), "num_filter": 2, "num_group": 2,
                "num_deformable_group": 2, "dilate": (2, 2)},
        second="MXNet 1.9.1 has no FGradient for its backward: raises its error"),
    "_backward_DeformableConvolution": dict(skip="DeformableConvolution's backward kernel: "
                                                 "raises MXNet's no-FGradient error"),
    "_contrib_ModulatedDeformableConvolution": dict(
        inputs=[U(1, 2, 4, 4), U(1, 2 * 4, 3, 3, lo=-1.3, hi=1.7), U(1, 4, 3, 3),
                U(3, 2, 2, 2), U(3)],
        params={"kernel": (2, 2), "num_filter": 3},
        second="MXNet 1.9.1 has no FGradient for its backward: raises its error"),
    "_backward_ModulatedDeformableConvolution": dict(
        skip="ModulatedDeformableConvolution's backward kernel: raises MXNet's no-FGradient error"),
    "_contrib_DeformablePSROIPooling": dict(
        inputs=[U(1, 8, 6, 6), K([[0, 2, 2, 8, 9]]), U(1, 4, 2, 2, lo=-0.7, hi=0.7)],
        params={"spatial_scale": 0.5, "output_dim": 2, "group_size": 2, "pooled_size": 2,
                "sample_per_part": 2, "trans_std": 0.1},
        second="MXNet 1.9.1 has no FGradient for its backward: raises its error"),
    "_backward_DeformablePSROIPooling": dict(
        skip="DeformablePSROIPooling's backward kernel: raises MXNet's no-FGradient error"),
    # control flow: the nodes need subgraphs (built by sym.contrib.foreach & co.); their
    # gradients are checked against finite differences in tests/ops/test_control_flow.py
    **{name: dict(skip="a control-flow node needs its body subgraphs; checked against "
                       "finite differences in tests/ops/test_control_flow.py")
       for name in ("_foreach", "_while_loop", "_cond", "_backward_foreach",
                    "_backward_while_loop", "_backward_cond")},
    # a subgraph node (MXNet's make_subgraph): its body's rules, once-differentiable
    "_CachedOp": dict(params={"subgraph": (lambda a: mx.sym.sin(a) * mx.sym.Variable("c") + a)(
                          mx.sym.Variable("a")).tojson()},
                      inputs=[U(2, 3), U(2, 3)],
                      second="once-differentiable: the node re-runs its body's own rules"),
    "_backward_CachedOp": dict(skip="_CachedOp's backward: raises MXNet's no-FGradient error"),
    "_rnn_grad": dict(skip="the RNN's BPTT kernel: raises MXNet's no-FGradient error"),
    "make_loss": dict(skip=_MAKE_LOSS),
    "Custom": dict(params={"op_type": "_registry_test_cube"}, inputs=[U(2, 3), U(2, 3)],
                   second="custom operators are once-differentiable (a second order raises)"),
    **{name: dict(skip="a deprecated NumpyOp/NDArrayOp node: it needs a live Python op "
                       "object and computes in float32 only; its gradients are checked "
                       "against finite differences in tests/test_operator_legacy.py")
       for name in ("_Native", "_NDArray")},
    "CTCLoss": dict(inputs=[U(4, 2, 3, lo=-1, hi=1), K([[1, 2], [2, 0]]), K([4, 3])],
                   params={"use_data_lengths": True},
                   second="once-differentiable: the gradient comes from the alpha-beta "
                          "recursion (a second order raises, tests/ops/test_ctc.py)"),
    "_ctc_loss_backward": dict(skip="CTCLoss's backward: raises MXNet's no-FGradient error"),
    "_contrib_hawkesll": dict(
        inputs=[U(2, 3), U(3, lo=0.2, hi=0.6), U(3), U(2, 3), U(2, 4),
                K([[0, 2, 2, 1], [1, 1, 0, 2]], dtype="int32"), K([3, 4]), K([8.0, 9.0])],
        wrt=[0, 1, 2, 3],
        second="once-differentiable: the gradient is a kernel over the event sequence (a "
               "second order raises, tests/ops/test_contrib_misc.py)"),
    "_contrib_backward_hawkesll": dict(skip="hawkesll's backward: raises MXNet's "
                                            "no-FGradient error"),
    "_contrib_SparseEmbedding": dict(inputs=[I(2, 3, hi=4), U(4, 5)],
                                     params={"input_dim": 4, "output_dim": 5},
                                     second="its row_sparse weight gradient is not "
                                            "differentiable again (as Embedding's)"),
    "_contrib_SyncBatchNorm": dict(inputs=[U(2, 3, 2), U(3), U(3), U(3), U(3)],
                                   params={"fix_gamma": False, "key": "k"}),
    "IdentityAttachKLSparseReg": dict(skip="by MXNet's definition the backward adds a KL "
                                           "sparseness penalty to an identity's gradient "
                                           "(tested in tests/ops/test_contrib_misc.py)"),
    # custom: stop_gradient is an alias of BlockGrad
    # image (HWC images, CHW tensors)
    "_image_to_tensor": dict(inputs=[U(2, 3, 3)]),
    "_image_normalize": dict(inputs=[U(3, 2, 2)], params={"mean": (0.1, 0.2, 0.3),
                                                          "std": (0.5, 2.0, 4.0)}),
    "_backward_image_normalize": dict(inputs=[U(3, 2, 2)], params={"scale": (0.5, 2.0, 4.0)}),
    "_image_crop": dict(inputs=[U(3, 4, 3)], params={"x": 1, "y": 1, "width": 2, "height": 2}),
    "_backward_image_crop": dict(inputs=[U(2, 2, 3)], params={
        "x": 1, "y": 1, "width": 2, "height": 2, "in_shape": (3, 4, 3)}),
    "_image_flip_left_right": dict(inputs=[U(2, 3, 3)]),
    "_image_flip_top_bottom": dict(inputs=[U(2, 3, 3)]),
    "_image_random_flip_left_right": dict(inputs=[U(2, 3, 3)]),
    "_image_random_flip_top_bottom": dict(inputs=[U(2, 3, 3)]),
    "_image_random_brightness": dict(inputs=[U(2, 3, 3)],
                                     params={"min_factor": 0.5, "max_factor": 1.5}),
    "_image_adjust_lighting": dict(inputs=[U(2, 3, 3)], params={"alpha": (0.01, -0.02, 0.03)}),
    "_image_random_lighting": dict(inputs=[U(2, 3, 3)], params={"alpha_std": 0.01}),
}

# mx.np ops (gpunda/ops/np_*.py)
_NP_ONCE = "once-differentiable: the backward is a hand-written kernel (a second order raises)"
SPECS.update({
    "_npi_arcsin": dict(inputs=[U(2, 3, lo=-0.8, hi=0.8)]),
    "_npi_arccos": dict(inputs=[U(2, 3, lo=-0.8, hi=0.8)]),
    "_npi_arctanh": dict(inputs=[U(2, 3, lo=-0.8, hi=0.8)]),
    "_npi_arccosh": dict(inputs=[U(2, 3, lo=1.2, hi=2.0)]),
    "_npi_abs": dict(inputs=[U(2, 3, **_PM)]),
    "_npi_add": dict(inputs=[U(2, 3), U(1, 3)]),
    "_npi_subtract": dict(inputs=[U(2, 3), U(2, 1)]),
    "_npi_multiply": dict(inputs=[U(3), U(2, 3)]),
    "_npi_true_divide": dict(inputs=[U(2, 3), U(3)]),
    "_npi_mod": dict(inputs=[U(2, 3, lo=2.0, hi=3.0), U(2, 3, lo=0.6, hi=0.9)]),
    "_npi_power": dict(inputs=[U(2, 3), U(1, 3)]),
    "_npi_copysign": dict(inputs=[U(2, 3, **_PM), U(2, 3, **_PM)]),
    "_npi_nan_to_num": dict(inputs=[U(2, 3)]),
    "_npi_power_scalar": dict(params={"scalar": 2.5}),
    "_npi_rpower_scalar": dict(params={"scalar": 2.5}),
    "_npi_rtrue_divide_scalar": dict(params={"scalar": 2.0}),
    "_npi_rmod_scalar": dict(params={"scalar": 2.5}),
    "_npi_mod_scalar": dict(params={"scalar": 0.7}),
    "_npi_maximum_scalar": dict(params={"scalar": 1.0}),
    "_npi_minimum_scalar": dict(params={"scalar": 1.0}),
    "_npi_copysign_scalar": dict(inputs=[U(2, 3, **_PM)], params={"scalar": -1.0}),
    "_np_sum": dict(inputs=[U(2, 3, 2)], params={"axis": (0, 2)}),
    "_np_prod": dict(params={"axis": 1, "keepdims": True}),
    "_npi_mean": dict(params={"axis": 0}),
    "_npi_std": dict(inputs=[U(3, 4)], params={"axis": 1, "ddof": 1}),
    "_npi_var": dict(inputs=[U(3, 4)], params={"axis": (0, 1)}),
    "_np_cumsum": dict(params={"axis": 1}),
    "_np_dot": dict(inputs=[U(2, 3), U(3, 4)]),
    "_npi_matmul": dict(inputs=[U(2, 2, 3), U(3, 4)]),
    "_npi_tensordot": dict(inputs=[U(2, 3, 4), U(4, 3, 2)],
                           params={"a_axes_summed": (1, 2), "b_axes_summed": (1, 0)}),
    "_npi_einsum": dict(inputs=[U(2, 3), U(3, 4)], params={"subscripts": "ij,jk->ik",
                                                         "num_args": 2}),
    "_np_reshape": dict(inputs=[U(2, 3)], params={"newshape": (3, 2)}),
    "_np_transpose": dict(inputs=[U(2, 3, 4)], params={"axes": (2, 0, 1)}),
    "_np_moveaxis": dict(inputs=[U(2, 3, 4)], params={"source": (0,), "destination": (2,)}),
    "_npi_rollaxis": dict(inputs=[U(2, 3, 4)], params={"axis": 2}),
    "_npi_swapaxes": dict(params={"axis1": 0, "axis2": 1}),
    "_np_roll": dict(params={"shift": (1,), "axis": 1}),
    "_npi_expand_dims": dict(params={"axis": 1}),
    "_np_squeeze": dict(inputs=[U(2, 1, 3)]),
    "_npi_broadcast_to": dict(inputs=[U(1, 3)], params={"shape": (2, 3)}),
    "_np_atleast_1d": dict(inputs=[U(3), U(2, 3)], params={"num_args": 2}),
    "_np_atleast_2d": dict(inputs=[U(3), U(2, 3)], params={"num_args": 2}),
    "_np_atleast_3d": dict(inputs=[U(3), U(2, 3)], params={"num_args": 2}),
    "_np_trace": dict(inputs=[U(2, 3, 4)], params={"offset": -1, "axis1": 2, "axis2": 0}),
    "_npi_broadcast_arrays": dict(inputs=[U(1, 3), U(2, 1)], params={"num_args": 2}),
    "_npi_concatenate": dict(inputs=[U(2, 3), U(2, 2)], params={"num_args": 2, "axis": 1}),
    "_npi_split": dict(inputs=[U(2, 5)], params={"indices_or_sections": (1, 3), "axis": 1}),
    "_npi_tile": dict(params={"reps": (2, 1)}),
    "_npi_repeats": dict(params={"repeats": (2,), "axis": 1}),
    "_npi_pad": dict(params={"pad_width": (1, 0, 2, 1), "mode": "constant",
                             "constant_values": 0.5}),
    "_npi_delete": dict(inputs=[U(3, 4)], params={"int_ind": 1, "axis": 1}),
    "_npi_insert": dict(inputs=[U(3, 4), U(3)], params={"int_ind": 1, "axis": 1}),
    "_npi_insert_scalar": dict(inputs=[U(3, 4), U(3)], params={"int_ind": 1, "axis": 1}),
    "_npi_insert_slice": dict(inputs=[U(3, 4), U(3, 2)], params={"start": 1, "stop": 3,
                                                               "axis": 1}),
    "_npi_insert_tensor": dict(inputs=[U(3, 4), U(3, 2), K([1, 3], dtype="int64")],
                               params={"axis": 1}),
    "_npi_full_like": dict(params={"fill_value": 2.0}, zero=True),
    "_npi_where_scalar2": dict(inputs=[K([[1, 0, 1]], diff=True)], params={"x": 1.5, "y": -2.0},
                               wrt=[0], zero=True),
    "_scatter_set_nd": dict(inputs=[U(3, 4), U(2), K([[0, 2], [1, 3]])], params={"shape": (3, 4)}),
    "_npi_resize": dict(params={"new_shape": (4, 2)}),
    "_npi_take": dict(inputs=[U(4, 3), K([[0, 3], [2, 1]])], params={"axis": 0}),
    "_npi_take_along_axis": dict(inputs=[U(2, 3), K([[2, 0], [1, 1]], dtype="int64")],
                                 params={"axis": 1}),
    "_npi_where": dict(inputs=[K([[1, 0, 1], [0, 1, 0]]), U(2, 3), U(1, 3)]),
    "_npi_solve": dict(inputs=[G(_spd(3)), U(3, 2)]),
    "_npi_pinv_scalar_rcond": dict(inputs=[U(2, 3)]),
    "_npi_pinv": dict(inputs=[U(2, 3), K(1e-15)]),
    "_npi_svd": dict(inputs=[U(2, 3)], second=_NP_ONCE),
    "_npi_diff": dict(inputs=[U(2, 4)], params={"n": 2, "axis": 1}),
    "_npi_sort": dict(inputs=[U(2, 4)], params={"axis": 1}),
    "_npi_ediff1d": dict(inputs=[U(2, 3), U(2)], params={"to_begin_arr": True,
                                                        "to_end_scalar": 1.5}),
    "_npi_polyval": dict(inputs=[U(3), U(2, 2)], second=_NP_ONCE),
    "_npi_average": dict(inputs=[U(2, 3), U(3)], params={"axis": 1, "weighted": True,
                                                        "returned": True}),
    "_npi_norm": dict(inputs=[U(2, 3)], params={"ord": "2", "axis": (0, 1)}, second=_NP_ONCE),
    "_npi_tensorinv": dict(inputs=[G(lambda r: _spd(4)(r).reshape(2, 2, 4))], params={"ind": 2}),
    "_npi_tensorsolve": dict(inputs=[G(lambda r: _spd(4)(r).reshape(4, 2, 2)), U(4)]),
    "_npi_uniform": dict(inputs=[U(2, 3, lo=0.0, hi=0.4), U(2, 3, lo=1.0, hi=2.0)],
                         params={"low": None, "high": None}),
    "_npi_normal": dict(inputs=[U(2, 3), U(2, 3)], params={"loc": None, "scale": None}),
    "_npi_lognormal": dict(inputs=[U(2, 3, lo=-0.5, hi=0.5), U(2, 3, lo=0.2, hi=0.5)],
                           params={"mean": None, "sigma": None}),
    "_npi_gumbel": dict(inputs=[U(2, 3), U(2, 3)], params={"loc": None, "scale": None}),
    "_npi_logistic": dict(inputs=[U(2, 3), U(2, 3)], params={"loc": None, "scale": None}),
    "_npi_exponential": dict(inputs=[U(2, 3)], params={"scale": None}),
    "_npi_rayleigh": dict(inputs=[U(2, 3)], params={"scale": None}),
    "_npi_weibull": dict(inputs=[U(2, 3, lo=1.0, hi=2.0)], params={"a": None}),
    "_npi_pareto": dict(inputs=[U(2, 3, lo=1.0, hi=2.0)], params={"a": None}),
    # npx.random's batch samplers: draws of shape size + (2, 3), summed back per cell
    "_npi_uniform_n": dict(inputs=[U(2, 3, lo=0.0, hi=0.4), U(2, 3, lo=1.0, hi=2.0)],
                           params={"low": None, "high": None, "size": (4,)}),
    "_npi_normal_n": dict(inputs=[U(2, 3), U(2, 3)],
                          params={"loc": None, "scale": None, "size": (4,)}),
})
# mx.np core (numpy/multiarray.py, numpy_extension/): comparisons are recorded with zero
# gradients by definition (as MXNet's); npx.reshape's codes
_NP_CMP = ("comparison: a bool output recorded with zero gradients, as MXNet's "
           "(tests/numpy/test_multiarray.py::test_comparison_backward_gives_zeros)")
for _cmp in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
             "logical_and", "logical_or", "logical_xor"):
    SPECS[f"_npi_{_cmp}"] = dict(inputs=[U(2, 3), U(1, 3)], skip=_NP_CMP)
    SPECS[f"_npi_{_cmp}_scalar"] = dict(params={"scalar": 1.0}, skip=_NP_CMP)
SPECS["_npx_reshape"] = dict(inputs=[U(2, 3, 2)], params={"newshape": (-2, -5)})
# MXNet refuses moments without axes ("Empty axes is not supported")
SPECS["moments"] = dict(inputs=[U(2, 3)], params={"axes": (0, 1)})
# np Symbol work: tensordot's int-axes op; boolean mask assignment (zero gradients, MXNet's
# MakeZeroGradNodes)
SPECS["_npi_tensordot_int_axes"] = dict(inputs=[U(2, 3, 4), U(3, 4, 2)], params={"axes": 2})
_MASK = K([[True, False, True], [False, True, True]], dtype="bool")
SPECS["_npi_boolean_mask_assign_scalar"] = dict(inputs=[U(2, 3), _MASK],
                                                params={"value": 2.0}, zero=True)
SPECS["_npi_boolean_mask_assign_tensor"] = dict(inputs=[U(2, 3), _MASK, U(1)], zero=True)


def _make_inputs(spec, rng):
    vals, diff = [], []
    for gen in spec["inputs"]:
        kind = gen[0]
        if kind == "u":
            _, shape, lo, hi = gen
            vals.append(rng.uniform(lo, hi, shape))
            diff.append(True)
        elif kind == "i":
            _, shape, hi, dtype = gen
            vals.append(rng.integers(0, hi, shape).astype(dtype))
            diff.append(False)
        elif kind == "g":
            _, fn, d = gen
            vals.append(np.asarray(fn(rng), dtype=np.float64))
            diff.append(d)
        else:
            _, v, dtype, d = gen
            vals.append(np.array(v, dtype=dtype))
            diff.append(d)
    return vals, diff


_NOT_DIFF_NAMES = ("index", "indices", "label", "condition")


def _input_names(op, p, n):
    try:
        names = list(op.input_names(p) if op.variadic else op.inputs)
    except Exception:
        names = []
    return names + [f"arg{i}" for i in range(len(names), n)]


def _default_spec(op):
    """Inputs for an op without an entry: (2, 3) float64 in [0.5, 1.5], one per input."""
    if op.variadic:
        if not op.key_var_num_args:
            return None, "its inputs depend on params (variadic) and it has no SPECS entry"
        return dict(inputs=[U(2, 3), U(2, 3)], params={op.key_var_num_args: 2}), None
    if op.required:
        return None, f"it has required params {list(op.required)} and no SPECS entry"
    return dict(inputs=[U(2, 3) for _ in op.inputs]), None


# Extra calls made only to see hidden ops at work (branches the SPECS entries miss).
CAPTURE_EXTRA = [
    ("Pooling", dict(inputs=[U(1, 1, 4, 4)], params={"kernel": (2, 2), "stride": (2, 2),
                                                     "pool_type": "avg"})),
    ("Embedding", dict(inputs=[I(2, 3, hi=4), U(4, 5)],
                       params={"input_dim": 4, "output_dim": 5, "sparse_grad": True})),
]


@functools.lru_cache(maxsize=None)
def _captured():
    """(inputs, params) with which gradient rules call the hidden ops.

    Runs every public op that has a usable spec (and CAPTURE_EXTRA) through
    ``grad(create_graph=True)``, noting the first recorded call of each hidden
    op; then does the same with the hidden ops found, until no new one shows up
    (hidden ops used by the gradients of hidden ops).
    """
    seen = {}
    real_record = ag._record

    def spy(op, p, inputs, outs):
        if op.hidden and op.name not in seen:
            seen[op.name] = ([x.asnumpy() for x in inputs], dict(p._given))
        return real_record(op, p, inputs, outs)

    def run(name, spec):
        try:
            case = _Case(name, all_ops()[name], spec)
            if case.wrt and case.float_out:
                case.analytic(case.vals, create_graph=True)
        except Exception:
            pass

    ag._record = spy
    try:
        todo = [(n, _resolve(n, op, capture=False)[0]) for n, op in sorted(all_ops().items())
                if not op.nondiff and op.gradient is not None
                and (not op.hidden or "inputs" in SPECS.get(n, {}))]
        todo += CAPTURE_EXTRA
        done = set()
        while todo:
            for name, spec in todo:
                if spec is not None and not spec.get("zero"):
                    run(name, spec)
                done.add(name)
            todo = [(n, _resolve(n, all_ops()[n], captured=seen)[0]) for n in sorted(seen)
                    if n not in done and n in all_ops() and not all_ops()[n].nondiff
                    and all_ops()[n].gradient is not None]
    finally:
        ag._record = real_record
    return seen


def _resolve(name, op, capture=True, captured=None):
    """The spec of op ``name`` and, when it has none, why.

    A hidden op's SPECS entry without ``inputs`` refines its captured call.
    """
    entry = SPECS.get(name)
    if op.hidden and capture and (entry is None or "inputs" not in entry):
        got = (_captured() if captured is None else captured).get(name)
        if got is not None:
            vals, params = got
            spec = dict(inputs=[K(v, dtype=v.dtype, diff=v.dtype.kind == "f") for v in vals],
                        params=params, captured=True)
            spec.update(entry or {})
            return spec, None
    if entry is not None:
        spec = dict(entry)
        spec.setdefault("inputs", [U(2, 3) for _ in (op.inputs if not op.variadic else ())])
        return spec, None
    return _default_spec(op)


class _Case:
    """One op with concrete inputs: forward values and gradients, analytic and numeric."""

    def __init__(self, name, op, spec):
        self.name, self.op, self.spec = name, op, spec
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.vals, diff = _make_inputs(spec, rng)
        self.params = dict(spec.get("params", {}))
        self.p = op.parse_params(self.params)
        self.fn = getattr(nd._internal, name)
        names = _input_names(op, self.p, len(self.vals))
        excluded = set(op.mutated(self.p)) | {i for i, n in enumerate(names)
                                      if n in op.aux_names(self.p) or n in _NOT_DIFF_NAMES
                                      or n in op.no_grad_inputs}
        wrt = spec.get("wrt")
        if wrt is None:
            wrt = [i for i, d in enumerate(diff) if d and i not in excluded
                   and self.vals[i].dtype.kind == "f"]
        self.wrt = list(wrt)
        self.train = spec.get("train", True)
        outs = self.forward(self.vals)
        self.float_out = [i for i, o in enumerate(outs) if o.dtype.kind == "f"]
        self.heads = [rng.normal(size=outs[i].shape) for i in self.float_out]
        # finite differences are only as exact as the outputs' dtype
        self.low_precision = any(outs[i].dtype != np.float64 for i in self.float_out)

    def _arrays(self, vals):
        return [nd.array(v, dtype=v.dtype) for v in vals]

    def _run(self, xs):
        if self.op.random:
            mx.random.seed(1234)
        pre = self.spec.get("pre")
        if pre is not None:
            xs = pre(xs)
        # through nd.<op>, as users call it (a family may wrap the generated function)
        r = self.fn(*xs, **self.params)
        return [r] if isinstance(r, nd.NDArray) else list(r)

    def forward(self, vals):
        with ag.pause(train_mode=self.train):
            return [(o if o.stype == "default" else o.tostype("default")).asnumpy()
                    for o in self._run(self._arrays(vals))]

    def objective(self, vals):
        outs = self.forward(vals)
        return sum(float(np.sum(outs[i].astype(np.float64) * h))
                   for i, h in zip(self.float_out, self.heads))

    def analytic(self, vals, create_graph=False):
        xs = self._arrays(vals)
        for i in self.wrt:
            xs[i].attach_grad()
        with ag.record(train_mode=self.train):
            outs = self._run(xs)
        heads = [outs[i] for i in self.float_out]
        hg = [nd.array(h, dtype=o.dtype, ctx=o.context) for h, o in zip(self.heads, heads)]
        grads = ag.grad(heads, [xs[i] for i in self.wrt], head_grads=hg,
                        create_graph=create_graph)
        return xs, grads

    def numeric(self, f, vals, eps):
        """Central differences of scalar function ``f`` w.r.t. the ``wrt`` inputs."""
        res = []
        for i in self.wrt:
            base = [v.copy() for v in vals]
            g = np.zeros(base[i].shape)
            flat = base[i].reshape(-1)
            for k in range(flat.size):
                old = flat[k]
                flat[k] = old + eps
                fp = f(base)
                flat[k] = old - eps
                fm = f(base)
                flat[k] = old
                g.reshape(-1)[k] = (fp - fm) / (2 * eps)
            res.append(g)
        return res


def _tolerances(case):
    if case.low_precision:
        return case.spec.get("rtol", 1e-2), case.spec.get("atol", 1e-3), case.spec.get("eps", 1e-3)
    return case.spec.get("rtol", 1e-4), case.spec.get("atol", 1e-6), case.spec.get("eps", 1e-6)


def _case_or_fail(name):
    op = all_ops()[name]
    spec, why = _resolve(name, op)
    if spec is None:
        pytest.fail(f"op {name!r} has no entry in SPECS (tests/test_registry_gradients.py) and "
                    f"the default inputs cannot be used: {why}. Add an entry saying how to make "
                    f"valid inputs/params, or declare the op nondiff=True if it has no gradient.")
    if spec.get("skip"):
        pytest.skip(f"{name}: {spec['skip']}")
    try:
        return _Case(name, op, spec)
    except Exception as e:
        origin = ("captured from a public op's gradient" if spec.get("captured") else
                  "from SPECS" if name in SPECS else
                  "DEFAULT (no SPECS entry): two/one (2, 3) float64 inputs in [0.5, 1.5]")
        pytest.fail(f"op {name!r}: forward failed with inputs {origin}: "
                    f"{type(e).__name__}: {e}. Add or fix its SPECS entry.")


_DIFF_OPS = sorted(n for n, op in all_ops().items() if not op.nondiff and op.gradient is not None)

# Ops MXNet registers without FGradient (neither a gradient nor nondiff): differentiating
# through them raises. Any other op without a gradient rule is a registration mistake.
NO_FGRADIENT = {"batch_take"}


def test_only_mxnets_ops_without_fgradient_lack_a_gradient_rule():
    lacking = {op.name for op in all_ops().values() if not op.nondiff and op.gradient is None}
    assert lacking == NO_FGRADIENT

# Ops of other families whose check fails today: (op, "first" | "second") -> why.
# Strict xfail: once the op is fixed the test XPASSes, fails, and the entry must go.
KNOWN_FAILURES = {}


def _params(order):
    return [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[(n, order)],
                                                    strict=True))
            if (n, order) in KNOWN_FAILURES else n for n in _DIFF_OPS]


@pytest.mark.parametrize("name", _params("first"))
def test_gradient_matches_finite_differences(name):
    case = _case_or_fail(name)
    if not case.wrt:
        pytest.fail(f"op {name!r}: no float input to differentiate; fix its SPECS entry")
    if not case.float_out:
        pytest.fail(f"op {name!r}: no float output, yet the op is not nondiff=True")
    rtol, atol, eps = _tolerances(case)
    _, plain = case.analytic(case.vals)
    _, recorded = case.analytic(case.vals, create_graph=True)
    if case.spec.get("zero"):
        numeric = [np.zeros(case.vals[i].shape) for i in case.wrt]
    else:
        numeric = case.numeric(case.objective, case.vals, eps)
    for i, g, gc, ng in zip(case.wrt, plain, recorded, numeric):
        iname = _input_names(case.op, case.p, len(case.vals))[i]
        assert_almost_equal(g, ng, rtol=rtol, atol=atol,
                            names=(f"{name} autograd d/d{iname}", f"{name} numeric d/d{iname}"))
        assert_almost_equal(gc, g, rtol=1e-10, atol=1e-12,
                            names=(f"{name} d/d{iname} with create_graph=True",
                                   f"{name} d/d{iname} plain"))


@pytest.mark.parametrize("name", _params("second"))
def test_second_order(name):
    case = _case_or_fail(name)
    why = case.spec.get("second", True)
    if why is not True:
        pytest.skip(f"{name}: {why or 'second order not checked'}")
    if case.spec.get("zero") or not case.wrt or not case.float_out:
        pytest.skip(f"{name}: no first-order gradient to differentiate")
    rtol, atol, eps = _tolerances(case)
    eps = case.spec.get("eps2", 1e-5 if not case.low_precision else 1e-2)
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    vs = [rng.normal(size=case.vals[i].shape) for i in case.wrt]

    def first_order_dot_v(vals):
        _, gs = case.analytic(vals)
        return sum(float(np.sum(g.asnumpy() * v)) for g, v in zip(gs, vs))

    xs, gs = case.analytic(case.vals, create_graph=True)
    # x * 0 heads keep every variable in the graph (a linear op's gradient does
    # not depend on its own input)
    with ag.record():
        anchors = [xs[i] * 0.0 for i in case.wrt]
    hv = ag.grad(list(gs) + anchors, [xs[i] for i in case.wrt],
                 head_grads=[nd.array(v, dtype=g.dtype) for v, g in zip(vs, gs)]
                 + [nd.zeros(a.shape, dtype=a.dtype) for a in anchors])
    numeric = case.numeric(first_order_dot_v, case.vals, eps)
    for i, g, ng in zip(case.wrt, hv, numeric):
        iname = _input_names(case.op, case.p, len(case.vals))[i]
        assert_almost_equal(g, ng, rtol=rtol, atol=max(atol, 1e-5),
                            names=(f"{name} second-order d/d{iname} (create_graph)",
                                   f"{name} numeric d/d{iname} of first-order gradient"))


def _report():
    """Print, per op, whether it has a spec and whether both checks pass."""
    no_spec, failing = [], []
    for name in _DIFF_OPS:
        op = all_ops()[name]
        has = name in SPECS or (op.hidden and name in _captured())
        for test in (test_gradient_matches_finite_differences, test_second_order):
            try:
                test(name)
                status = "ok"
            except pytest.skip.Exception as e:
                status = f"skip ({e})"
            except BaseException as e:     # noqa: BLE001 - a report, not a test
                status = f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:150]}"
                failing.append((name, test.__name__, status))
            if test is test_gradient_matches_finite_differences and not has:
                no_spec.append((name, status))
    print(f"{len(_DIFF_OPS)} differentiable ops; {len(no_spec)} without a SPECS entry:")
    for name, status in no_spec:
        print(f"  {name:32s} {status}")
    print(f"{len(failing)} failing checks:")
    for name, test, status in failing:
        print(f"  {name:32s} {test:45s} {status}")


if __name__ == "__main__":
    _report()
