"""Converters: Reshape and friends, transpose, slicing, concat/split, pad, tile/repeat,
take/pick, broadcast_to, reverse, constants and shape queries."""
from __future__ import annotations

import numpy as np

from gpunda.onnx._registry import register

_INT_MAX = np.iinfo(np.int64).max
_INT_MIN = np.iinfo(np.int64).min


@register("Reshape", "reshape_like")
def reshape(g, node):
    # MXNet's special codes (0, -1, -2, -3, -4, reverse) are resolved by shape inference;
    # dims that follow a dynamic input stay symbolic in ``reshape_to``
    g.reshape_to(node, g.inp(node, 0), g.out_shape(node), [g.out(node)])


@register("Flatten")
def flatten(g, node):
    g.add("Flatten", [g.inp(node, 0)], [g.out(node)], axis=1)


@register("transpose")
def transpose(g, node):
    nd = len(g.in_shape(node, 0))
    axes = list(node.p.axes or ()) or list(range(nd))[::-1]
    g.add("Transpose", [g.inp(node, 0)], [g.out(node)], perm=[a % nd for a in axes])


@register("SwapAxis")
def swap_axis(g, node):
    nd = len(g.in_shape(node, 0))
    perm = list(range(nd))
    a, b = node.p.dim1 % nd, node.p.dim2 % nd
    perm[a], perm[b] = perm[b], perm[a]
    g.add("Transpose", [g.inp(node, 0)], [g.out(node)], perm=perm)


@register("expand_dims")
def expand_dims(g, node):
    nd = len(g.in_shape(node, 0)) + 1
    g.unsqueeze(g.inp(node, 0), [node.p.axis % nd], [g.out(node)])


@register("squeeze")
def squeeze(g, node):
    shape = g.in_shape(node, 0)
    axis = node.p.axis
    if axis is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    else:
        axes = sorted(a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis))
    if not axes:
        g.add("Identity", [g.inp(node, 0)], [g.out(node)])
    else:
        g.squeeze(g.inp(node, 0), axes, [g.out(node)])


def _slice(g, node, x, starts, ends, axes, steps, out):
    g.add("Slice", [x, g.ints(starts, "starts"), g.ints(ends, "ends"), g.ints(axes, "axes"),
                    g.ints(steps, "steps")], out)


@register("slice")
def slice_(g, node):
    p = node.p
    begin, end = list(p.begin), list(p.end)
    step = list(p.step or ()) + [None] * (len(begin) - len(p.step or ()))
    starts, ends, axes, steps = [], [], [], []
    for k, (b, e, s) in enumerate(zip(begin, end, step)):
        s = 1 if s is None else int(s)
        if s == 0:
            raise g.unsupported(node, "step 0")
        starts.append((0 if s > 0 else -1) if b is None else int(b))
        ends.append((_INT_MAX if s > 0 else _INT_MIN) if e is None else int(e))
        axes.append(k)
        steps.append(s)
    _slice(g, node, g.inp(node, 0), starts, ends, axes, steps, [g.out(node)])


@register("slice_axis")
def slice_axis(g, node):
    p = node.p
    end = _INT_MAX if p.end is None else int(p.end)
    _slice(g, node, g.inp(node, 0), [int(p.begin)], [end], [int(p.axis)], [1], [g.out(node)])


@register("slice_like")
def slice_like(g, node):
    shape, like = g.in_shape(node, 0), g.out_shape(node)
    axes = [k for k in range(len(shape)) if shape[k] != like[k]] or [0]
    _slice(g, node, g.inp(node, 0), [0] * len(axes), [like[k] for k in axes], axes,
           [1] * len(axes), [g.out(node)])


@register("Concat", "_rnn_param_concat")
def concat(g, node):
    ins = [g.inp(node, i) for i in range(len(node.inputs))]
    g.add("Concat", ins, [g.out(node)], axis=int(node.p.dim))


@register("stack")
def stack(g, node):
    nd = len(g.in_shape(node, 0)) + 1
    axis = node.p.axis % nd
    ins = [g.unsqueeze(g.inp(node, i), [axis]) for i in range(len(node.inputs))]
    g.add("Concat", ins, [g.out(node)], axis=axis)


@register("SliceChannel")
def slice_channel(g, node):
    p = node.p
    shape = g.in_shape(node, 0)
    axis = p.axis % len(shape)
    n = int(p.num_outputs)
    outs = g.outs(node)
    sizes = g.ints([shape[axis] // n] * n, "split")
    if p.squeeze_axis:
        parts = g.add("Split", [g.inp(node, 0), sizes], n, axis=axis)
        parts = [parts] if n == 1 else parts
        for part, out in zip(parts, outs):
            g.squeeze(part, [axis], [out])
    else:
        g.add("Split", [g.inp(node, 0), sizes], outs, axis=axis)


@register("Pad")
def pad(g, node):
    p = node.p
    w = list(p.pad_width)
    pads = w[0::2] + w[1::2]
    mode = {"constant": "constant", "edge": "edge", "reflect": "reflect"}[p.mode]
    ins = [g.inp(node, 0), g.ints(pads, "pads")]
    if mode == "constant":
        ins.append(g.scalar(p.constant_value, g.in_dtype(node, 0), "value"))
    g.add("Pad", ins, [g.out(node)], mode=mode)


@register("tile")
def tile(g, node):
    shape = g.in_shape(node, 0)
    reps = list(node.p.reps)
    x = g.inp(node, 0)
    if len(reps) > len(shape):
        x = g.unsqueeze(x, list(range(len(reps) - len(shape))))
    reps = [1] * (len(shape) - len(reps)) + reps
    g.add("Tile", [x, g.ints(reps, "reps")], [g.out(node)])


@register("repeat")
def repeat(g, node):
    p = node.p
    x, shape = g.inp(node, 0), g.in_shape(node, 0)
    if p.axis is None:
        x, shape, axis = g.add("Reshape", [x, g.ints([-1])]), (int(np.prod(shape)),), 0
    else:
        axis = p.axis % len(shape)
    u = g.unsqueeze(x, [axis + 1])
    reps = [1] * (len(shape) + 1)
    reps[axis + 1] = int(p.repeats)
    t = g.add("Tile", [u, g.ints(reps, "reps")])
    g.add("Reshape", [t, g.ints(g.out_shape(node))], [g.out(node)])


def _indices(g, node, i, dim, mode):
    idx = g.add("Cast", [g.inp(node, i)], to=g.onnx_dtype(np.int64))
    if mode == "wrap":
        return g.add("Mod", [idx, g.scalar(dim, np.int64)], fmod=0)
    if mode == "clip":
        return g.add("Clip", [idx, g.scalar(0, np.int64), g.scalar(dim - 1, np.int64)])
    return idx


@register("take")
def take(g, node):
    shape = g.in_shape(node, 0)
    axis = node.p.axis % len(shape)
    idx = _indices(g, node, 1, shape[axis], node.p.mode)
    g.add("Gather", [g.inp(node, 0), idx], [g.out(node)], axis=axis)


@register("pick")
def pick(g, node):
    p = node.p
    shape = g.in_shape(node, 0)
    if p.axis is None:
        raise g.unsupported(node, "axis=None")
    axis = p.axis % len(shape)
    idx = _indices(g, node, 1, shape[axis], p.mode)
    if len(g.in_shape(node, 1)) < len(shape):
        idx = g.unsqueeze(idx, [axis])
    y = g.add("GatherElements", [g.inp(node, 0), idx], axis=axis)
    if p.keepdims:
        g.bind(node, 0, y)
    else:
        g.squeeze(y, [axis], [g.out(node)])


@register("broadcast_to", "broadcast_axis")
def broadcast_to(g, node):
    g.add("Expand", [g.inp(node, 0), g.ints(g.out_shape(node), "shape")], [g.out(node)])


@register("broadcast_like")
def broadcast_like(g, node):
    if node.p.lhs_axes is not None or node.p.rhs_axes is not None:
        broadcast_to(g, node)
        return
    g.add("Expand", [g.inp(node, 0), g.add("Shape", [g.inp(node, 1)])], [g.out(node)])


@register("reverse")
def reverse(g, node):
    nd = len(g.in_shape(node, 0))
    ax = node.p.axis
    axes = sorted({a % nd for a in ((ax,) if isinstance(ax, int) else ax)})
    _slice(g, node, g.inp(node, 0), [-1] * len(axes), [_INT_MIN] * len(axes), axes,
           [-1] * len(axes), [g.out(node)])


@register("zeros_like", "ones_like")
def fill_like(g, node):
    v = 0 if node.op.name == "zeros_like" else 1
    val = g.helper.make_tensor("value", g.onnx_dtype(g.in_dtype(node, 0)), [1], [v])
    g.add("ConstantOfShape", [g.add("Shape", [g.inp(node, 0)])], [g.out(node)], value=val)


@register("_zeros", "_ones", "_full", "_arange", "_zeros_without_dtype")
def constant(g, node):
    # a graph constant: evaluate it once with gpunda itself
    from gpunda._engine import imperative
    out = imperative.invoke(node.op.name, [], **node.p.attrs()).asnumpy()
    g.set_output_type(node, 0, out.shape, out.dtype)
    g.bind(node, 0, g.const(out, hint="value"))


@register("shape_array")
def shape_array(g, node):
    g.add("Shape", [g.inp(node, 0)], [g.out(node)])


@register("size_array")
def size_array(g, node):
    s = g.add("Size", [g.inp(node, 0)])
    g.add("Reshape", [s, g.ints([1])], [g.out(node)])


@register("one_hot")
def one_hot(g, node):
    p = node.p
    dt = g.out_dtype(node)
    idx = g.add("Cast", [g.inp(node, 0)], to=g.onnx_dtype(np.int64))
    vals = g.const(np.asarray([p.off_value, p.on_value], dtype=dt), hint="values")
    g.add("OneHot", [idx, g.ints([p.depth], "depth"), vals], [g.out(node)], axis=-1)


@register("gather_nd")
def gather_nd(g, node):
    # MXNet's indices are (M, ...) with M leading; ONNX wants them last
    idx = g.add("Cast", [g.inp(node, 1)], to=g.onnx_dtype(np.int64))
    nd = len(g.in_shape(node, 1))
    idx = g.add("Transpose", [idx], perm=list(range(1, nd)) + [0])
    g.add("GatherND", [g.inp(node, 0), idx], [g.out(node)])


@register("SequenceMask")
def sequence_mask(g, node):
    p = node.p
    if not p.use_sequence_length:
        g.add("Identity", [g.inp(node, 0)], [g.out(node)])
        return
    shape = g.in_shape(node, 0)
    axis = p.axis % len(shape)
    steps = g.const(np.arange(shape[axis]), np.int64, "steps")
    lens = g.add("Cast", [g.inp(node, 1)], to=g.onnx_dtype(np.int64))
    # mask[t, b] = t < len[b], laid out as (T, N) or (N, T)
    if axis == 0:
        mask = g.add("Less", [g.unsqueeze(steps, [1]), g.unsqueeze(lens, [0])])
    else:
        mask = g.add("Less", [g.unsqueeze(steps, [0]), g.unsqueeze(lens, [1])])
    if len(shape) > 2:
        mask = g.unsqueeze(mask, list(range(2, len(shape))))
    val = g.scalar(p.value, g.in_dtype(node, 0), "value")
    g.add("Where", [mask, g.inp(node, 0), val], [g.out(node)])


@register("SequenceReverse")
def sequence_reverse(g, node):
    p = node.p
    if p.axis != 0:
        raise g.unsupported(node, f"axis={p.axis} (MXNet reverses along axis 0 only)")
    x = g.inp(node, 0)
    if p.use_sequence_length:
        lens = g.add("Cast", [g.inp(node, 1)], to=g.onnx_dtype(np.int64))
        # ONNX wants lengths in [1, T]; a length of 0 reverses nothing in MXNet, as 1 does, and
        # runtimes disagree on 0 (ONNX Runtime 1.23 zeroes that sequence)
        lens = g.add("Max", [lens, g.ints([1], "min_len")])
    else:       # every sequence is full length: T repeated over the batch
        dims = g.add("Shape", [x])
        steps = g.add("Gather", [dims, g.ints([0], "time")], axis=0)
        batch = g.add("Gather", [dims, g.ints([1], "batch")], axis=0)
        lens = g.add("Expand", [steps, batch])
    g.add("ReverseSequence", [x, lens], [g.out(node)], batch_axis=1, time_axis=0)


@register("Crop")
def crop(g, node):
    from gpunda.ops.nn.crop import _crop_geometry
    p = node.p
    like = len(node.inputs) > 1
    moving = [k for k in (2, 3) if k in g.varying_in(node, 0)
              or (like and len(g.in_shape(node, 1)) - 4 + k in g.varying_in(node, 1))]
    if p.center_crop and moving:
        raise g.unsupported(node, "center_crop=True with a dynamic height or width")
    (top, left), (h, w) = _crop_geometry(p, g.in_shape(node, 0),
                                         g.in_shape(node, 1) if like else None)
    starts = g.ints([top, left], "starts")
    if like and moving:         # the window follows crop_like's size at run time
        size = g.add("Slice", [g.add("Shape", [g.inp(node, 1)]), g.ints([-2], "from"),
                               g.ints([_INT_MAX], "to")])
        ends = g.add("Add", [starts, size])
    else:
        ends = g.ints([top + h, left + w], "ends")
    g.add("Slice", [g.inp(node, 0), starts, ends, g.ints([2, 3], "axes")], [g.out(node)])


@register("_split_v2")
def split_v2(g, node):
    p = node.p
    shape = g.in_shape(node, 0)
    axis = p.axis % len(shape)
    x = g.inp(node, 0)
    if p.sections > 0:
        # equal parts, sized at run time (so a dynamic axis works too)
        n = int(p.sections)
        extra = {"num_outputs": n} if g.opset >= 18 else {}
        parts = g.add("Split", [x], n, axis=axis, **extra)
        parts = [parts] if n == 1 else parts
    else:
        # part k runs from indices[k] to indices[k + 1] (the last to the end of the axis)
        bounds = [int(b) for b in p.indices] + [_INT_MAX]
        parts = [g.add("Slice", [x, g.ints([b], "starts"), g.ints([e], "ends"),
                                 g.ints([axis], "axes")])
                 for b, e in zip(bounds[:-1], bounds[1:])]
    if p.squeeze_axis:
        for part, out in zip(parts, g.outs(node)):
            g.squeeze(part, [axis], [out])
    else:
        for i, part in enumerate(parts):
            g.bind(node, i, part)
