"""One small graph per converter family: export, ONNX Runtime, import back; the reference
is gpunda's own forward of the same Symbol (its ops are checked against MXNet elsewhere)."""
import numpy as np
import pytest

from _onnx_check import check_all

import gpunda as mx

S = mx.sym
R = np.random.RandomState(0)


def _f(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


x = S.var("data")
y = S.var("other")
idx = S.var("idx")
lens = S.var("lens")
cls = S.var("cls")
cls2 = S.var("cls2")
w = S.var("w")
b = S.var("b")

# (id, symbol, data inputs, parameters); built with their own name counters (conftest.py)
_NAMES = mx.name.NameManager()
_NAMES.__enter__()
CASES = [
    ("conv_group_dilate", S.Convolution(x, w, b, kernel=(3, 3), num_filter=4, num_group=2,
                                         stride=(2, 1), pad=(1, 2), dilate=(1, 2)),
     {"data": _f(1, 4, 9, 8)}, {"w": _f(4, 2, 3, 3), "b": _f(4)}),
    ("conv1d", S.Convolution(x, w, kernel=(3,), num_filter=2, no_bias=True),
     {"data": _f(1, 3, 7)}, {"w": _f(2, 3, 3)}),
    ("deconv", S.Deconvolution(x, w, b, kernel=(3, 3), num_filter=2, stride=(2, 2), pad=(1, 1),
                               no_bias=False,
                               adj=(1, 1)), {"data": _f(1, 3, 4, 5)},
     {"w": _f(3, 2, 3, 3), "b": _f(2)}),
    ("pool_max_full", S.Pooling(x, kernel=(3, 3), stride=(2, 2), pool_type="max",
                                pooling_convention="full"), {"data": _f(1, 2, 8, 8)}, {}),
    ("pool_avg_pad", S.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"),
     {"data": _f(1, 2, 7, 7)}, {}),
    ("pool_avg_nopad", S.Pooling(x, kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="avg",
                                 count_include_pad=False), {"data": _f(1, 2, 6, 6)}, {}),
    ("pool_avg_full", S.Pooling(x, kernel=(3, 3), stride=(2, 2), pool_type="avg",
                                pooling_convention="full"), {"data": _f(1, 2, 8, 8)}, {}),
    ("pool_3d", S.Pooling(x, kernel=(2, 2, 2), stride=(2, 2, 2), pool_type="max"),
     {"data": _f(1, 2, 4, 4, 4)}, {}),
    ("pool_lp", S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2),
     {"data": _f(1, 2, 6, 6)}, {}),
    ("pool_global", S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="max")
     + S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg"),
     {"data": _f(1, 3, 5, 5)}, {}),
    ("batchnorm_fix_gamma", S.BatchNorm(x, S.var("g"), b, S.var("m"), S.var("v"),
                                        fix_gamma=True, eps=1e-3),
     {"data": _f(2, 3, 4, 4)},
     {"g": _f(3, lo=.5, hi=1.5), "b": _f(3), "m": _f(3), "v": _f(3, lo=.5, hi=1.5)}),
    ("layernorm", S.LayerNorm(x, S.var("g"), b, axis=-1, eps=1e-5), {"data": _f(2, 3, 6)},
     {"g": _f(6), "b": _f(6)}),
    ("layernorm_axis1", S.LayerNorm(x, S.var("g"), b, axis=1), {"data": _f(2, 3, 4)},
     {"g": _f(3), "b": _f(3)}),
    ("instancenorm", S.InstanceNorm(x, S.var("g"), b, eps=1e-3), {"data": _f(2, 3, 4, 4)},
     {"g": _f(3), "b": _f(3)}),
    ("l2norm_lrn", S.L2Normalization(x, mode="channel") + S.LRN(x, nsize=3),
     {"data": _f(1, 4, 3, 3)}, {}),
    ("activations", S.Activation(x, act_type="relu") + S.Activation(x, act_type="sigmoid")
     + S.Activation(x, act_type="tanh") + S.Activation(x, act_type="softrelu")
     + S.Activation(x, act_type="softsign"), {"data": _f(2, 5)}, {}),
    ("leaky_variants", S.LeakyReLU(x, act_type="leaky", slope=0.1)
     + S.LeakyReLU(x, act_type="elu", slope=0.3) + S.LeakyReLU(x, act_type="selu")
     + S.LeakyReLU(x, act_type="gelu"), {"data": _f(2, 5)}, {}),
    ("prelu", S.LeakyReLU(x, S.var("g"), act_type="prelu"), {"data": _f(1, 3, 2, 2)},
     {"g": _f(3, lo=0.05, hi=0.3)}),
    ("fc_noflatten", S.FullyConnected(x, w, b, num_hidden=4, flatten=False),
     {"data": _f(2, 3, 5)}, {"w": _f(4, 5), "b": _f(4)}),
    ("fc_flatten", S.FullyConnected(x, w, num_hidden=4, no_bias=True),
     {"data": _f(2, 3, 2)}, {"w": _f(4, 6)}),
    ("reshape_codes", S.Reshape(x, shape=(0, -3)) * 2 + S.Reshape(x, shape=(-4, 1, 2, -2))
     .reshape((-1, 12))
     + S.Reshape(x, shape=(-2,), reverse=True).reshape((2, 0, 4)).reshape((0, -1)),
     {"data": _f(2, 3, 4)}, {}),
    ("slices", S.slice(x, begin=(None, 1), end=(None, 3)).sum()
     + S.slice_axis(x, axis=2, begin=1, end=None).mean()
     + S.slice(x, begin=(None, None, 3), end=(None, None, 0), step=(1, 1, -1)).max(),
     {"data": _f(2, 4, 5)}, {}),
    ("concat_split", S.broadcast_add(S.Concat(*S.split(x, num_outputs=2, axis=1), dim=2),
                     S.stack(x, x, axis=0).sum(axis=0).reshape((2, 2, 6))
                     .sum(axis=2, keepdims=True)),
     {"data": _f(2, 4, 3)}, {}),
    ("split_squeeze", S.Group(list(S.split(x, num_outputs=3, axis=1, squeeze_axis=True))),
     {"data": _f(2, 3, 4)}, {}),
    ("broadcast_math", S.broadcast_add(x, y) * S.broadcast_sub(x, y) 
     + S.broadcast_maximum(x, y) - S.broadcast_minimum(x, y)
     + S.broadcast_power(S.abs(x) + 0.5, y) + S.broadcast_mod(x, S.abs(y) + 0.5),
     {"data": _f(2, 3, 4), "other": _f(1, 3, 1)}, {}),
    # Symbol operators of two Symbols make MXNet's equal-shape ops (_power, _mod, _equal, ...)
    ("symbol_operators", S.maximum(x, y) - S.minimum(x, y) + (S.abs(x) + 0.5) ** y
     + x % (S.abs(y) + 0.5) + (x == y) + (x != y) + (x > y) + (x >= y) + (x < y) + (x <= y)
     + S.hypot(x, y), {"data": _f(3, 4), "other": _f(3, 4)}, {}),
    ("scalar_math", (x + 1) * 2 - 3 / (S.abs(x) + 1) + (1 - x) ** 2 + 2 ** x
     + S.maximum(x, 0.2) + S.minimum(x, -0.1) + (x > 0) + (x <= 0.3) + (x == 0.5)
     + (x != 0.5), {"data": _f(3, 4)}, {}),
    ("unary", S.exp(x) + S.log(S.abs(x) + 1) + S.sqrt(S.abs(x)) + S.square(x) + S.floor(x)
     + S.ceil(x) + S.round(x * 3) + S.sign(x) + S.sin(x) + S.cos(x) + S.arctan(x)
     + S.tanh(x) + S.sigmoid(x) + S.erf(x) + S.log1p(S.abs(x)) + S.expm1(x)
     + S.rsqrt(S.abs(x) + 1) + S.reciprocal(x + 3) + S.negative(x) + S.relu(x)
     + S.trunc(x * 3) + S.log2(S.abs(x) + 1) + S.cbrt(x), {"data": _f(3, 4)}, {}),
    ("reductions", S.Group([S.sum(x, axis=1), S.mean(x, axis=(1, 2), keepdims=False),
                            S.max(x, axis=1), S.min(x, axis=1), S.prod(x, axis=1),
                            S.sum(x, axis=2, exclude=True), S.sum(x), S.norm(x, axis=1),
                            S.clip(x, -0.5, 0.5).sum(axis=1)]),
     {"data": _f(2, 3, 4)}, {}),
    ("softmax_family", S.softmax(x, axis=1) + S.log_softmax(x, axis=-1)
     + S.softmax(x, axis=-1, temperature=2.0) + S.SoftmaxActivation(x, mode="channel"),
     {"data": _f(2, 3, 4)}, {}),
    ("softmax_output", S.SoftmaxOutput(x, name="softmax"), {"data": _f(2, 5)}, {}),
    ("dropout_embedding", S.Dropout(S.Embedding(x, w, input_dim=7, output_dim=3), p=0.5),
     {"data": np.array([[0, 3, 6], [1, 1, 2]], np.float32)}, {"w": _f(7, 3)}),
    ("transpose_expand", S.Group([S.transpose(x, axes=(2, 0, 1)), S.transpose(x),
                                  S.expand_dims(S.squeeze(S.sum(x, axis=1, keepdims=True)),
                                                axis=-1)]), {"data": _f(2, 3, 4)}, {}),
    ("where_cast", S.where(x > 0, x, y) + S.Cast(S.Cast(x * 4, dtype="int32"),
                                                   dtype="float32"),
     {"data": _f(3, 4), "other": _f(3, 4)}, {}),
    ("topk_argmax", S.Group([S.topk(x, k=2, axis=1, ret_typ="value"),
                             S.topk(x, k=2, axis=-1, ret_typ="indices", is_ascend=True),
                             S.argmax(x, axis=1), S.argmin(x, axis=0, keepdims=True),
                             S.argmax(x)]),
     {"data": _f(3, 5)}, {}),
    ("pad_modes", S.Pad(x, mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                        constant_value=0.5).sum(axis=(2, 3))
     + S.Pad(x, mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)).sum(axis=(2, 3))
     + S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)).sum(axis=(2, 3)),
     {"data": _f(1, 2, 4, 4)}, {}),
    ("upsampling", S.UpSampling(x, scale=2, sample_type="nearest", num_args=1),
     {"data": _f(1, 2, 3, 3)}, {}),
    ("bilinear_resize", S.contrib.BilinearResize2D(x, height=6, width=5, align_corners=True),
     {"data": _f(1, 2, 3, 4)}, {}),
    ("tile_repeat_take", S.tile(x, reps=(2, 1)).sum(axis=0) + S.repeat(x, repeats=2, axis=0)
     .sum(axis=0) + S.take(x, idx, axis=0).sum(axis=0),
     {"data": _f(3, 4), "idx": np.array([2, 0, 1], np.float32)}, {}),
    ("broadcast_to_like_reverse", S.broadcast_to(x, shape=(3, 4)) + S.broadcast_like(x, y)
     + S.reverse(y, axis=1) + S.zeros_like(y) + S.ones_like(y),
     {"data": _f(1, 4), "other": _f(3, 4)}, {}),
    ("dot_batch_dot", S.dot(x, w, transpose_b=True).sum() + S.batch_dot(
        S.reshape(x, (2, 2, 3)), S.reshape(x, (2, 2, 3)), transpose_b=True).sum(),
     {"data": _f(4, 3)}, {"w": _f(5, 3)}),
    ("add_n_logic", S.add_n(x, y, x) + S.logical_not(x > 0)
     + S.broadcast_logical_and(x > 0, y > 0) + S.broadcast_logical_or(x > 0, y > 0),
     {"data": _f(3, 4), "other": _f(3, 4)}, {}),
    ("depth_space", S.depth_to_space(S.space_to_depth(x, block_size=2), block_size=2),
     {"data": _f(1, 2, 4, 4)}, {}),
    ("selfatt", S.Group([S.contrib.interleaved_matmul_selfatt_qk(x, heads=2),
                         S.contrib.interleaved_matmul_selfatt_valatt(
                             x, S.softmax(S.contrib.interleaved_matmul_selfatt_qk(x, heads=2)),
                             heads=2)]), {"data": _f(3, 2, 24)}, {}),
    ("arange_like", S.Group([S.contrib.arange_like(x, start=1.5, step=0.5, repeat=2),
                             S.contrib.arange_like(x, axis=1)]), {"data": _f(2, 5)}, {}),
    ("roi_pooling", S.ROIPooling(x, y, pooled_size=(2, 2), spatial_scale=0.5),
     {"data": _f(1, 2, 8, 8), "other": np.array([[0, 0, 0, 8, 8], [0, 4, 2, 14, 12]],
                                                np.float32)}, {}),
    ("gather_nd_one_hot_pick", S.Group([
        S.gather_nd(x, idx), S.one_hot(idx, depth=4, on_value=2.0),
        S.pick(x, cls, axis=1), S.pick(x, cls2, axis=1, keepdims=True)]),
     {"data": _f(3, 4), "idx": np.array([[0, 2, 1], [1, 3, 0]], np.float32),
      "cls": np.array([3, 0, 2], np.float32), "cls2": np.array([[1], [2], [0]], np.float32)},
     {}),
    ("sequence_mask", S.Group([S.SequenceMask(x, lens, use_sequence_length=True,
                                              value=-1.0),
                               S.SequenceMask(S.swapaxes(x, 0, 1), lens,
                                              use_sequence_length=True, axis=1)]),
     {"data": _f(4, 3, 2), "lens": np.array([1, 4, 2], np.float32)}, {}),
    ("slice_like_reshape_like", S.Group([S.slice_like(x, y), S.reshape_like(y, S.var("z"))]),
     {"data": _f(3, 5), "other": _f(2, 4), "z": _f(4, 2)}, {}),
    ("constants", x + S.zeros((2, 3)) + S.ones((2, 3)) * 2
     + S.broadcast_to(S.arange(0, 3).reshape((1, 3)), shape=(2, 3)) + S.full((2, 3), 0.5),
     {"data": _f(2, 3)}, {}),
    ("adaptive_pool", S.Group([S.contrib.AdaptiveAvgPooling2D(x, output_size=1),
                               S.contrib.AdaptiveAvgPooling2D(x, output_size=(2, 3))]),
     {"data": _f(1, 2, 4, 6)}, {}),
    ("misc_unary", S.Group([S.hard_sigmoid(x, alpha=0.3, beta=0.4), S.argmax_channel(x),
                            S.broadcast_axis(S.sum(x, axis=1, keepdims=True), axis=1, size=3),
                            S.norm(x), S.topk(x, k=2, ret_typ="both"),
                            S.broadcast_hypot(x, y), S.softmin(x), S.log_softmax(x, axis=0),
                            S.LeakyReLU(x, act_type="rrelu", lower_bound=0.1,
                                        upper_bound=0.3)]),
     {"data": _f(3, 4), "other": _f(1, 4)}, {}),
    ("l2norm_modes", S.Group([S.L2Normalization(x, mode="instance"),
                              S.L2Normalization(x, mode="spatial")]),
     {"data": _f(2, 3, 2, 2)}, {}),
    ("deconv_target_shape", S.Deconvolution(x, w, kernel=(3, 3), num_filter=2, stride=(2, 2),
                                            target_shape=(8, 9)),
     {"data": _f(1, 3, 4, 5)}, {"w": _f(3, 2, 3, 3)}),
    ("batchnorm_last_axis", S.BatchNorm(x, S.var("g"), b, S.var("m"), S.var("v"), axis=-1,
                                        fix_gamma=False),
     {"data": _f(2, 3, 4)},
     {"g": _f(4, lo=.5, hi=1.5), "b": _f(4), "m": _f(4), "v": _f(4, lo=.5, hi=1.5)}),
    ("softmax_output_multi", S.SoftmaxOutput(x, multi_output=True, name="softmax"),
     {"data": _f(2, 3, 4)}, {}),
    ("softmax_output_preserve", S.SoftmaxOutput(x, preserve_shape=True, name="softmax"),
     {"data": _f(2, 3, 4)}, {}),
    ("softmax_output_flat", S.SoftmaxOutput(x, name="softmax"), {"data": _f(2, 3, 4)}, {}),
    ("take_modes", S.Group([S.take(x, idx, mode="wrap"),
                            S.take(x, idx, axis=1, mode="clip")]),
     {"data": _f(3, 4), "idx": np.array([[-1, 5], [2, 0]], np.float32)}, {}),
]
_NAMES.__exit__(None, None, None)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_converter_roundtrip(case, tmp_path):
    _, sym, data, params = case
    names = [n for n in sym.list_inputs() if n not in params and not n.endswith("_label")]
    feed = {n: data[n] for n in names}
    args = {k: mx.nd.array(v) for k, v in list(data.items()) + list(params.items())}
    args = {k: v for k, v in args.items() if k in sym.list_inputs()}
    aux = {k: args.pop(k) for k in sym.list_auxiliary_states()}
    labels = [n for n in sym.list_inputs() if n.endswith("_label")]
    if labels:
        shapes = dict(zip(sym.list_arguments(), sym.infer_shape_partial(
            **{k: v.shape for k, v in feed.items()})[0]))
        for lab in labels:
            args[lab] = mx.nd.zeros(shapes[lab])
    ex = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    want = [o.asnumpy() for o in ex.forward(is_train=False)]
    path = tmp_path / "m.onnx"
    mx.onnx.export_model(sym, {k: mx.nd.array(v) for k, v in params.items()},
                         [feed[n].shape for n in names], np.float32, str(path))
    check_all(path, feed, want)
