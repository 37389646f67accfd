"""ONNX importers: Reshape and friends, Transpose, slicing, Concat/Split, Pad, Tile,
Gather, Expand, shape queries, OneHot, and the recurrent layers (LSTM, GRU, RNN)."""
from __future__ import annotations

import numpy as np

from gpunda.contrib.onnx._import_ops import importer, _op, _axes, _INT_BIG


@importer("Reshape")
def reshape(imp, node, attrs, ins):
    if attrs.get("allowzero", 0):
        raise imp.unsupported("allowzero=1")
    src = imp.shape_source.get(ins[1])
    if src is not None:
        return _op(imp, "reshape_like", imp.get(ins[0]), imp.get(src))
    shape = imp.need_const(ins[1], "the shape")
    return _op(imp, "Reshape", imp.get(ins[0]), shape=tuple(int(d) for d in shape))


@importer("Flatten")
def flatten(imp, node, attrs, ins):
    axis = int(attrs.get("axis", 1))
    if axis == 1:
        return _op(imp, "Flatten", imp.get(ins[0]))
    if axis == 0:
        return _op(imp, "Reshape", imp.get(ins[0]), shape=(1, -1))
    axis %= imp.rank(ins[0])
    y = _op(imp, "Reshape", imp.get(ins[0]), shape=tuple([0] * axis + [-1]))
    return _merge_leading(imp, y, axis)


def _merge_leading(imp, y, axis):
    # (d0, ..., d_{axis-1}, rest) -> (d0*...*d_{axis-1}, rest)
    for _ in range(axis - 1):
        y = imp.sym.Reshape(y, shape=(-3, -2))
    return y


@importer("Transpose")
def transpose(imp, node, attrs, ins):
    perm = attrs.get("perm")
    return _op(imp, "transpose", imp.get(ins[0]), axes=tuple(perm) if perm else ())


@importer("Unsqueeze")
def unsqueeze(imp, node, attrs, ins):
    axes = _axes(imp, attrs, ins, 1)
    nd = imp.rank(ins[0]) + len(axes)
    y = imp.get(ins[0])
    for a in sorted(a % nd for a in axes):
        y = imp.sym.expand_dims(y, axis=a)
    return _op(imp, "identity", y)


@importer("Squeeze")
def squeeze(imp, node, attrs, ins):
    axes = _axes(imp, attrs, ins, 1)
    return _op(imp, "squeeze", imp.get(ins[0]), axis=tuple(axes) if axes else None)


@importer("Slice")
def slice_(imp, node, attrs, ins):
    starts = [int(v) for v in imp.need_const(ins[1], "starts")]
    ends = [int(v) for v in imp.need_const(ins[2], "ends")]
    axes = ([int(v) for v in imp.need_const(ins[3], "axes")] if len(ins) > 3 and ins[3]
            else list(range(len(starts))))
    steps = ([int(v) for v in imp.need_const(ins[4], "steps")] if len(ins) > 4 and ins[4]
             else [1] * len(starts))
    if any(a < 0 for a in axes):
        r = imp.rank(ins[0])
        axes = [a % r for a in axes]
    n = max(axes) + 1
    begin, end, step = [None] * n, [None] * n, [None] * n
    for a, b, e, s in zip(axes, starts, ends, steps):
        begin[a] = None if (s > 0 and b == 0) or abs(b) >= _INT_BIG else b
        end[a] = None if abs(e) >= _INT_BIG else e
        step[a] = s
    return _op(imp, "slice", imp.get(ins[0]), begin=tuple(begin), end=tuple(end),
               step=tuple(step))


@importer("Concat")
def concat(imp, node, attrs, ins):
    xs = [imp.get(i) for i in ins if i]
    return _op(imp, "Concat", *xs, dim=int(attrs["axis"]), num_args=len(xs))


@importer("Split")
def split(imp, node, attrs, ins):
    n = len(node.output)
    axis = int(attrs.get("axis", 0))
    sizes = attrs.get("split")
    if sizes is None and len(ins) > 1 and ins[1]:
        sizes = [int(v) for v in imp.need_const(ins[1], "split")]
    x = imp.get(ins[0])
    if sizes is None or len(set(sizes)) == 1:
        parts = _op(imp, "SliceChannel", x, num_outputs=n, axis=axis)
        return [parts[i] for i in range(n)] if n > 1 else [parts]
    outs, off = [], 0
    for s in sizes:
        outs.append(imp.sym.slice_axis(x, axis=axis, begin=off, end=off + s))
        off += s
    return outs


@importer("Pad")
def pad(imp, node, attrs, ins):
    pads = attrs.get("pads")
    if pads is None:
        pads = [int(v) for v in imp.need_const(ins[1], "pads")]
    if len(ins) > 3 and ins[3]:
        raise imp.unsupported("the axes input")
    value = 0.0
    if len(ins) > 2 and ins[2]:
        value = float(imp.need_const(ins[2], "constant_value").reshape(()))
    nd = len(pads) // 2
    width = [w for k in range(nd) for w in (pads[k], pads[k + nd])]
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise imp.unsupported(f"mode={mode!r}")
    return _op(imp, "Pad", imp.get(ins[0]), mode=mode, pad_width=tuple(width),
               constant_value=value)


@importer("Tile")
def tile(imp, node, attrs, ins):
    reps = imp.need_const(ins[1], "repeats")
    return _op(imp, "tile", imp.get(ins[0]), reps=tuple(int(r) for r in reps))


@importer("Gather")
def gather(imp, node, attrs, ins):
    src, axis = imp.shape_source.get(ins[0]), imp.const(ins[1])
    if src is not None and axis is not None and axis.ndim == 0:
        imp.dim_source[node.output[0]] = (src, int(axis))   # one dim of a tensor's shape
    return _op(imp, "take", imp.get(ins[0]), imp.get(ins[1]), axis=int(attrs.get("axis", 0)),
               mode="wrap")


@importer("GatherElements")
def gather_elements(imp, node, attrs, ins):
    r = imp.rank(ins[0])
    axis = int(attrs.get("axis", 0)) % r
    ishape = imp.shapes.get(ins[1])
    if ishape is None or ishape[axis] != 1:
        raise imp.unsupported("indices with more than one entry along the axis (MXNet's "
                              "pick takes one)")
    # with keepdims, MXNet's pick takes the index with the axis kept, as ONNX does
    return _op(imp, "pick", imp.get(ins[0]), imp.get(ins[1]), axis=axis, keepdims=True,
               mode="wrap")


@importer("GatherND")
def gather_nd(imp, node, attrs, ins):
    if attrs.get("batch_dims", 0):
        raise imp.unsupported("batch_dims")
    r = imp.rank(ins[1])
    idx = imp.sym.transpose(imp.get(ins[1]), axes=(r - 1,) + tuple(range(r - 1)))
    return _op(imp, "gather_nd", imp.get(ins[0]), idx)


@importer("Expand")
def expand(imp, node, attrs, ins):
    src = imp.shape_source.get(ins[1])
    if src is not None:
        return _op(imp, "broadcast_like", imp.get(ins[0]), imp.get(src))
    shape = tuple(int(d) for d in imp.need_const(ins[1], "the shape"))
    if len(shape) != imp.rank(ins[0]):
        raise imp.unsupported(f"Expand to shape {shape} of another rank")
    return _op(imp, "broadcast_to", imp.get(ins[0]), shape=shape)


@importer("Shape")
def shape(imp, node, attrs, ins):
    if attrs.get("start", 0) or attrs.get("end") is not None:
        raise imp.unsupported("start/end")
    return _op(imp, "shape_array", imp.get(ins[0]))


@importer("Range")
def range_(imp, node, attrs, ins):
    start = imp.need_const(ins[0], "start")
    delta = imp.need_const(ins[2], "delta")
    dim = imp.dim_source.get(ins[1])
    if dim is None:
        limit = imp.need_const(ins[1], "limit (or one dim of a tensor's shape)")
        return imp.new_param(imp.op_name(), np.arange(start, limit, delta, dtype=start.dtype))
    if start.item() != 0 or delta.item() != 1:
        raise imp.unsupported("a range over a shape that does not start at 0 by 1")
    src, axis = dim
    y = _op(imp, "_contrib_arange_like", imp.get(src), axis=axis)
    if axis is None:
        y = imp.sym.Reshape(y, shape=(-1,))
    return imp.sym.Cast(y, dtype=start.dtype.name)


@importer("Size")
def size(imp, node, attrs, ins):
    imp.dim_source[node.output[0]] = (ins[0], None)
    return imp.sym.reshape(_op(imp, "size_array", imp.get(ins[0])), shape=())


@importer("ConstantOfShape")
def constant_of_shape(imp, node, attrs, ins):
    src = imp.shape_source.get(ins[0])
    val = imp.onnx.numpy_helper.to_array(attrs["value"]) if "value" in attrs else \
        np.zeros(1, np.float32)
    if src is None:
        shp = tuple(int(d) for d in imp.need_const(ins[0], "the shape"))
        return imp.new_param(imp.op_name(), np.full(shp, val.reshape(()), dtype=val.dtype))
    like = imp.sym.Cast(imp.get(src), dtype=val.dtype.name)
    v = val.reshape(()).item()
    if v == 0:
        return _op(imp, "zeros_like", like)
    if v == 1:
        return _op(imp, "ones_like", like)
    return _op(imp, "_plus_scalar", imp.sym.zeros_like(like), scalar=v)


@importer("OneHot")
def one_hot(imp, node, attrs, ins):
    if attrs.get("axis", -1) != -1:
        raise imp.unsupported(f"axis={attrs['axis']}")
    depth = int(np.asarray(imp.need_const(ins[1], "depth")).reshape(()))
    vals = imp.need_const(ins[2], "values")
    return _op(imp, "one_hot", imp.get(ins[0]), depth=depth, off_value=float(vals[0]),
               on_value=float(vals[1]), dtype=vals.dtype.name)


# -- recurrent layers --------------------------------------------------------------------
_FROM_ONNX = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2], "RNN": [0]}


def _mx_gates(a, op):
    parts = np.split(a, len(_FROM_ONNX[op]), axis=0)
    return np.concatenate([parts[i] for i in _FROM_ONNX[op]], axis=0)


@importer("LSTM", "GRU", "RNN")
def recurrent(imp, node, attrs, ins):
    op = node.op_type
    if attrs.get("layout", 0):
        raise imp.unsupported("layout=1")
    if len(ins) > 4 and ins[4]:
        raise imp.unsupported("sequence_lens")
    if len(ins) < 6 or not ins[5]:
        raise imp.unsupported("no initial_h")
    if attrs.get("clip") is not None or attrs.get("input_forget", 0):
        raise imp.unsupported("clip / input_forget")
    direction = attrs.get("direction", "forward")
    if direction == "reverse":
        raise imp.unsupported("direction='reverse'")
    d = 2 if direction == "bidirectional" else 1
    h = int(attrs["hidden_size"])
    if op == "GRU" and not attrs.get("linear_before_reset", 0):
        raise imp.unsupported("linear_before_reset=0 (MXNet's GRU resets after the matmul)")
    mode = {"LSTM": "lstm", "GRU": "gru"}.get(op)
    if op == "RNN":
        acts = [a.decode() if isinstance(a, bytes) else a
                for a in attrs.get("activations", ["Tanh"] * d)]
        if len(set(acts)) != 1 or acts[0] not in ("Tanh", "Relu"):
            raise imp.unsupported(f"activations {acts}")
        mode = "rnn_tanh" if acts[0] == "Tanh" else "rnn_relu"
    if op == "LSTM" and len(ins) > 7 and ins[7]:
        raise imp.unsupported("peepholes")
    w = imp.need_const(ins[1], "W")
    r = imp.need_const(ins[2], "R")
    b = imp.const(ins[3]) if len(ins) > 3 and ins[3] else None
    g = w.shape[1] // h
    if b is None:
        b = np.zeros((d, 2 * g * h), dtype=w.dtype)
    weights = [a for k in range(d) for a in (_mx_gates(w[k], op), _mx_gates(r[k], op))]
    biases = [a for k in range(d) for a in (_mx_gates(b[k][:g * h], op),
                                            _mx_gates(b[k][g * h:], op))]
    flat = np.concatenate([a.reshape(-1) for a in weights + biases])
    params = imp.new_param(f"{imp.op_name()}_parameters", flat)
    args = [imp.get(ins[0]), params, imp.get(ins[5])]
    if op == "LSTM":
        if len(ins) < 7 or not ins[6]:
            raise imp.unsupported("no initial_c")
        args.append(imp.get(ins[6]))
    res = _op(imp, "RNN", *args, state_size=h, num_layers=1, bidirectional=d == 2,
              mode=mode, state_outputs=True)
    # MXNet's (T, N, D*H) as ONNX's Y (T, D, N, H)
    y = imp.sym.Reshape(res[0], shape=(0, 0, d, h))
    y = imp.sym.transpose(y, axes=(0, 2, 1, 3))
    outs = [y, res[1]]
    if op == "LSTM":
        outs.append(res[2])
    return outs
