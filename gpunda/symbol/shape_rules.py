"""Partial shape rules for symbolic shape inference (MXNet's FInferShape on partial shapes).

A shape here is None (rank unknown) or a tuple whose unknown dimensions are -1.
A rule ``rule(p, ins, outs) -> (ins, outs)`` gets the current shapes of a
node's inputs and of all its outputs and returns what it can say about each
(None where it says nothing); ``infer.py`` merges the answers and raises when
two known dimensions disagree. Rules run in both directions, as MXNet's do,
so an output shape learned downstream fills in unknown input dimensions
(``test_incomplete_infer_*`` in MXNet's suite).

Only ops that must reason about unknown dimensions have a rule; for every
other op ``infer.py`` computes the outputs once all input shapes are complete.
"""
from __future__ import annotations

import math

from gpunda.base import GpundaError

__all__ = ["rule_for", "merge", "known"]


def known(s):
    """True when ``s`` is a shape with every dimension known."""
    return s is not None and all(d >= 0 for d in s)


def merge(a, b, where):
    """The shape that agrees with both ``a`` and ``b``; GpundaError when they conflict."""
    if a is None:
        return None if b is None else tuple(b)
    if b is None:
        return a
    if len(a) != len(b):
        raise GpundaError(f"{where}: has shape {_show(a)} but the graph needs {_show(b)} "
                          f"(different ranks)")
    out = []
    for x, y in zip(a, b):
        if x >= 0 and y >= 0 and x != y:
            raise GpundaError(f"{where}: has shape {_show(a)} but the graph needs {_show(b)} "
                              f"(dimension {len(out)} differs)")
        out.append(x if x >= 0 else y)
    return tuple(out)


def _show(s):
    return "(" + ", ".join("?" if d < 0 else str(d) for d in s) + (",)" if len(s) == 1 else ")")


def _dim(a, b):
    return a if a >= 0 else b


# ---------------------------------------------------------------------------
# element-wise: every input and output has one shape


def same_shape(p, ins, outs):
    s = None
    for x in list(ins) + list(outs):
        s = merge(s, x, "element-wise shapes")
    return [s] * len(ins), [s] * len(outs)


def pairwise(p, ins, outs):
    """Output i has input i's shape, both ways (amp_multicast)."""
    both = [merge(a, b, "amp_multicast shapes") for a, b in zip(ins, outs)]
    return both, list(both)


def broadcast(p, ins, outs):
    """MXNet's BinaryBroadcastShape: known pairs must match or be 1; forward only."""
    a, b = ins
    if a is None or b is None:
        return ins, outs
    n = max(len(a), len(b))
    a2 = (1,) * (n - len(a)) + tuple(a)
    b2 = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a2, b2):
        if x < 0 or y < 0:
            out.append(-1)
        elif x != y and x != 1 and y != 1:
            raise GpundaError(f"operands could not be broadcast together with shapes "
                              f"{_show(a)} {_show(b)}")
        else:
            out.append(y if x == 1 else x)
    return ins, [tuple(out)]


# ---------------------------------------------------------------------------
# layers


def fully_connected(p, ins, outs):
    ins = list(ins)
    data, out = ins[0], outs[0]
    H = p.num_hidden
    w = ins[1]
    if data is not None:
        if p.flatten:
            if len(data) == 2 and data[1] < 0 and w is not None and w[1] >= 0:
                data = (data[0], w[1])
            rest = data[1:]
            k = math.prod(rest) if all(d >= 0 for d in rest) else -1
            out = merge(out, (data[0], H), "FullyConnected output")
            data = (_dim(data[0], out[0]),) + tuple(data[1:])
        else:
            k = data[-1] if data[-1] >= 0 or w is None else w[1]
            out = merge(out, tuple(data[:-1]) + (H,), "FullyConnected output")
            data = tuple(_dim(d, o) for d, o in zip(data[:-1], out[:-1])) + (k,)
        ins[0] = data
        ins[1] = (H, k)
    else:
        return ins, outs        # MXNet infers nothing before the data's rank is known
    if not p.no_bias:
        ins[2] = (H,)
    return ins, [out] + list(outs[1:])


def convolution(p, ins, outs):
    from gpunda.ops.nn.conv import _conv_geo
    ins = list(ins)
    data, out = ins[0], outs[0]
    kernel = tuple(p.kernel)
    nd = len(kernel)
    if getattr(p, "layout", None) not in (None, {1: "NCW", 2: "NCHW", 3: "NCDHW"}.get(nd)):
        return ins, outs        # channel-last layouts: the forward compute decides
    w = ins[1]
    C = -1 if data is None else data[1]
    if C < 0 and w is not None and w[1] >= 0:
        C = w[1] * p.num_group
    ins[1] = (p.num_filter, C // p.num_group if C >= 0 else -1) + kernel
    if not p.no_bias:
        ins[2] = (p.num_filter,)
    if data is None and out is None:
        return ins, outs
    if data is None:
        data = (-1,) * (nd + 2)
    _, stride, dilate, pad = _conv_geo(p, len(data), "Convolution")
    dk = [dilate[i] * (kernel[i] - 1) + 1 for i in range(nd)]
    sp = []
    for i, s in enumerate(data[2:]):
        sp.append((s + 2 * pad[i] - dk[i]) // stride[i] + 1 if s >= 0 else -1)
    out = merge(out, (data[0], p.num_filter) + tuple(sp), "Convolution output")
    # back-fill the data: the batch always, a spatial size when its stride is 1
    back = [out[0], C]
    for i, s in enumerate(data[2:]):
        if s < 0 and stride[i] == 1 and out[2 + i] >= 0:
            s = out[2 + i] - 1 + dk[i] - 2 * pad[i]
        back.append(s)
    ins[0] = merge(data, tuple(back), "Convolution data")
    return ins, [out] + list(outs[1:])


def deconvolution(p, ins, outs):
    """Deconvolution on partial shapes: the weight (in channels, num_filter / num_group,
    *kernel) and bias as soon as the channels are known, output sizes where the input's are
    (or ``target_shape``'s)."""
    from gpunda.ops.nn.conv import _conv_geo, _tuple
    ins = list(ins)
    data, out = ins[0], outs[0]
    kernel = tuple(p.kernel)
    nd = len(kernel)
    if getattr(p, "layout", None) not in (None, {1: "NCW", 2: "NCHW", 3: "NCDHW"}.get(nd)):
        return ins, outs        # channel-last layouts: the forward compute decides
    w = ins[1]
    C = -1 if data is None else data[1]
    if C < 0 and w is not None and w[0] >= 0:
        C = w[0]
    ins[1] = (C, p.num_filter // p.num_group) + kernel
    if not p.no_bias:
        ins[2] = (p.num_filter,)
    if data is None:
        return ins, outs
    _, stride, dilate, pad = _conv_geo(p, nd + 2, "Deconvolution")
    adj = _tuple(p.adj, nd, 0, "Deconvolution", "adj")
    target = p.target_shape
    if target is not None and target != () and any(t > 0 for t in target):
        sp = _tuple(target, nd, 0, "Deconvolution", "target_shape")
    else:
        sp = tuple(stride[i] * (s - 1) + dilate[i] * (kernel[i] - 1) + 1 - 2 * pad[i] + adj[i]
                   if s >= 0 else -1 for i, s in enumerate(data[2:]))
    out = merge(out, (data[0], p.num_filter) + sp, "Deconvolution output")
    ins[0] = merge(data, (out[0], C) + tuple(data[2:]), "Deconvolution data")
    return ins, [out] + list(outs[1:])


def embedding(p, ins, outs):
    data = ins[0]
    out = None if data is None else tuple(data) + (p.output_dim,)
    if outs[0] is not None and data is None:
        data = tuple(outs[0][:-1])
    return [data, (p.input_dim, p.output_dim)], [out]


# ---------------------------------------------------------------------------
# array manipulation


def concat(p, ins, outs):
    n = len(ins)
    ref = next((s for s in list(ins) + [outs[0]] if s is not None), None)
    if ref is None:
        return ins, outs
    nd = len(ref)
    ax = p.dim + nd if p.dim < 0 else p.dim
    if not 0 <= ax < nd:
        raise GpundaError(f"Concat: dim={p.dim} is out of range for inputs of rank {nd}")
    # every dimension but `ax` is shared by the inputs and the output
    common = (-1,) * nd
    for s in list(ins) + [outs[0]]:
        if s is not None:
            common = merge(common, s[:ax] + (-1,) + s[ax + 1:], "Concat shapes")
    sizes = [-1 if s is None else s[ax] for s in ins]
    total = -1 if outs[0] is None else outs[0][ax]
    if all(d >= 0 for d in sizes):
        total = merge((total,), (sum(sizes),), "Concat output")[0]
    elif total >= 0 and sum(d < 0 for d in sizes) == 1:
        sizes[sizes.index(-1)] = total - sum(d for d in sizes if d >= 0)
    put = lambda d: common[:ax] + (d,) + common[ax + 1:]  # noqa: E731
    return [put(d) for d in sizes][:n], [put(total)]


def rnn_param_concat(p, ins, outs):
    """``_rnn_param_concat`` (MXNet's RNNParamConcatShape): Concat's rule, and when several
    inputs have an unknown size on the axis (the weights of the first layer with the input
    size deferred), they share what the output leaves, equally."""
    ins, outs = concat(p, ins, outs)
    out = outs[0]
    if out is None or any(s is None for s in ins):
        return ins, outs
    ax = p.dim + len(out) if p.dim < 0 else p.dim
    open_ = [k for k, s in enumerate(ins) if s[ax] < 0]
    if len(open_) > 1 and out[ax] >= 0:
        left = out[ax] - sum(s[ax] for s in ins if s[ax] >= 0)
        if left >= 0 and left % len(open_) == 0:
            ins = list(ins)
            for k in open_:
                ins[k] = ins[k][:ax] + (left // len(open_),) + ins[k][ax + 1:]
    return ins, outs


def slice_channel(p, ins, outs):
    n = p.num_outputs
    data = ins[0]
    o = None
    for s in outs:
        o = merge(o, s, "SliceChannel outputs")
    nd = len(data) if data is not None else (None if o is None else len(o) + bool(p.squeeze_axis))
    if nd is None:
        return ins, outs
    ax = p.axis + nd if p.axis < 0 else p.axis
    if data is None:
        data = (-1,) * nd
    if o is not None:
        part = o[:ax] + (1,) + o[ax:] if p.squeeze_axis else o
        whole = part[:ax] + ((part[ax] * n if part[ax] >= 0 else -1),) + part[ax + 1:]
        if p.squeeze_axis:
            whole = whole[:ax] + (n,) + whole[ax + 1:]
        data = merge(data, whole, "SliceChannel data")
    d = data[ax]
    piece = -1 if d < 0 else d // n
    o = data[:ax] + ((piece,) if not p.squeeze_axis else ()) + data[ax + 1:]
    return [data], [o] * len(outs)


def transpose(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    axes = tuple(p.axes) if p.axes else tuple(range(len(data) - 1, -1, -1))
    if len(axes) != len(data):
        raise GpundaError(f"transpose: axes={axes} do not match the input rank {len(data)}")
    out = tuple(data[a] for a in axes)
    if outs[0] is not None:
        out = merge(out, outs[0], "transpose output")
        back = [-1] * len(data)
        for i, a in enumerate(axes):
            back[a] = out[i]
        data = merge(data, tuple(back), "transpose data")
    return [data], [out]


def pick(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    nd = len(data)
    if p.axis is None:
        return ins, outs
    ax = p.axis + nd if p.axis < 0 else p.axis
    out = data[:ax] + ((1,) if p.keepdims else ()) + data[ax + 1:]
    # MXNet's rule: the index has the data's rank with the axis kept as 1, or the rank
    # without the axis, whichever rank it has, whatever keepdims says about the output
    index = ins[1]
    kept = index is not None and len(index) == nd
    need = data[:ax] + ((1,) if kept else ()) + data[ax + 1:]
    return [data, merge(index, need, "pick index")], [out]


def dot(p, ins, outs):
    a, b = ins
    if a is None or b is None or len(a) < 1 or len(b) < 1:
        return ins, outs
    if (p.transpose_a and len(a) != 2) or (p.transpose_b and len(b) != 2) or \
            len(a) == 1 and len(b) == 1:
        return ins, outs        # the forward compute decides these forms
    a2 = tuple(reversed(a)) if p.transpose_a else tuple(a)
    b2 = tuple(reversed(b)) if p.transpose_b else tuple(b)
    if a2[-1] >= 0 and b2[0] >= 0 and a2[-1] != b2[0]:
        raise GpundaError(f"dot: shapes {_show(a)} and {_show(b)} do not match "
                          f"(transpose_a={p.transpose_a}, transpose_b={p.transpose_b})")
    return ins, [a2[:-1] + b2[1:]]


def np_dot(p, ins, outs):
    """NumPy's dot (``_np_dot``): the contracted axes (a's last, b's second-last, or b's
    only one) agree, so a known one fills the other (MXNet's np dot infers a weight's
    unknown input size from the data this way)."""
    a, b = ins
    if a is None or b is None or len(a) < 1 or len(b) < 1 or len(a) == 1 and len(b) == 1:
        return ins, outs
    kb = len(b) - 2 if len(b) >= 2 else 0
    d = _dim(a[-1], b[kb])
    if a[-1] >= 0 and b[kb] >= 0 and a[-1] != b[kb]:
        raise GpundaError(f"_np_dot: shapes {_show(a)} and {_show(b)} do not match")
    a = tuple(a[:-1]) + (d,)
    b = tuple(b[:kb]) + (d,) + tuple(b[kb + 1:])
    return [a, b], [a[:-1] + b[:kb] + b[kb + 1:]]


def batch_dot(p, ins, outs):
    a, b = ins
    if a is None or b is None or len(a) != 3 or len(b) != 3:
        return ins, outs
    m, ka = (a[2], a[1]) if p.transpose_a else (a[1], a[2])
    kb, n = (b[2], b[1]) if p.transpose_b else (b[1], b[2])
    if ka < 0 or kb < 0:
        return ins, outs        # MXNet needs the contracted dimensions to infer anything
    if ka != kb:
        raise GpundaError(f"batch_dot: shapes {_show(a)} and {_show(b)} do not match "
                          f"(transpose_a={p.transpose_a}, transpose_b={p.transpose_b})")
    batch = merge((a[0],), (b[0],), "batch_dot batch size")[0]
    return ins, [(batch, m, n)]


def _size_fill(a, b):
    """``a`` with its one unknown dimension set so that its size equals known ``b``'s."""
    if a is None or not known(b) or sum(d < 0 for d in a) != 1:
        return a
    rest = math.prod(d for d in a if d >= 0)
    total = math.prod(b)
    if rest == 0 or total % rest:
        return a
    return tuple(total // rest if d < 0 else d for d in a)


def reshape(p, ins, outs):
    """Reshape keeps the size: one unknown dimension on either side follows the other."""
    data, out = ins[0], outs[0]
    return [_size_fill(data, out)], [_size_fill(out, data)]


def flatten(p, ins, outs):
    data, out = ins[0], outs[0]
    if data is not None and len(data) >= 1:
        rest = data[1:]
        k = math.prod(rest) if all(d >= 0 for d in rest) else -1
        out = merge(out, (data[0], k if rest else 1), "Flatten output")
        data = (_dim(data[0], out[0]),) + tuple(data[1:])
    return [_size_fill(data, out)], [out]


def _sliced(d, b, e, s):
    if d < 0:
        return -1
    return len(range(*slice(b, e, s).indices(d)))


def slice_rule(p, ins, outs):
    data = ins[0]
    if data is None or len(p.begin) > len(data):
        return ins, outs
    step = tuple(p.step or ())
    step += (None,) * (len(p.begin) - len(step))
    out = tuple(_sliced(data[i], p.begin[i], p.end[i] if i < len(p.end) else None, step[i])
                for i in range(len(p.begin))) + tuple(data[len(p.begin):])
    return ins, [out]


def slice_axis(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    ax = p.axis + len(data) if p.axis < 0 else p.axis
    if not 0 <= ax < len(data):
        return ins, outs
    out = data[:ax] + (_sliced(data[ax], p.begin, p.end, None),) + data[ax + 1:]
    return ins, [out]


def where(p, ins, outs):
    """MXNet's WhereOpShape: x, y and the output share one shape; the condition has it
    too, or is 1-D over its first axis. MXNet 1.9.1 says nothing until the condition's
    shape is wholly known (its test_where_partial_shape)."""
    cond, x, y = ins
    if not known(cond):
        return ins, outs
    s = merge(merge(x, y, "where x and y"), outs[0], "where output")
    if s is not None:
        if len(cond) == len(s):
            s = cond = merge(s, cond, "where condition")
        elif len(cond) == 1 and len(s) >= 1:
            d = merge((s[0],), cond, "where condition (1-D: the first axis of x)")[0]
            cond, s = (d,), (d,) + tuple(s[1:])
        else:
            raise GpundaError(f"where: condition shape {_show(cond)} must equal the shape "
                              f"of x {_show(s)} or be 1-D over its first axis")
    return [cond, s, s], [s]


def creation(p, ins, outs):
    """zeros/ones/full: the ``shape`` parameter, whose negative entries are unknown until the
    graph around says (MXNet's ``sym.ones(shape=(-1, -1))``); outside NumPy-shape mode a 0
    is unknown too (the legacy RNN cells' ``begin_state`` shapes ``(0, num_hidden)``)."""
    from gpunda.util import is_np_shape
    if is_np_shape():
        return ins, [tuple(p.shape)]
    return ins, [tuple(-1 if d == 0 else d for d in p.shape)]


def arange(p, ins, outs):
    """_arange: ceil((stop - start) / step) * repeat values; with ``infer_range`` and no
    ``stop`` the length is unknown until a consumer says (MXNet's RangeShape leaves it
    unknown and the graph fills it in)."""
    if p.stop is None and p.infer_range:
        return ins, [(-1,)]
    from gpunda.ops.tensor.creation import range_bounds
    start, stop = range_bounds("Operator _arange", p.start, p.stop, p.step, p.infer_range)
    return ins, [(max(int(math.ceil((stop - start) / p.step)), 0) * p.repeat,)]


def cached_op(p, ins, outs):
    """_CachedOp: inference inside its subgraph from what is known of the node's inputs and
    outputs, so shapes flow through it both ways (MXNet's DefaultSubgraphOpShapeHelper)."""
    from gpunda.ops.control_flow.subgraph import subgraph_symbol
    from gpunda.symbol.infer import infer_graph
    from gpunda.symbol.symbol import _var_shape
    sub = subgraph_symbol(p)
    inputs = [n for n in sub._topo() if n.op is None]
    given = {v.name: tuple(s) for v, s in zip(inputs, ins) if s is not None}
    seeds = {(id(n), i): tuple(s) for (n, i), s in zip(sub._outputs, outs) if s is not None}
    shapes, _ = infer_graph(sub, given, {}, _var_shape, seeds)
    return ([shapes.get((id(v), 0)) for v in inputs],
            [shapes.get((id(n), i)) for n, i in sub._outputs])


# ---------------------------------------------------------------------------
# int8: a quantized tensor travels with (1,) min/max arrays; MXNet's FInferShape of the
# quantize/requantize/dequantize ops and of quantized FC hands the output's batch size back
# to the data (quantize_v2-inl.h, quantized_fully_connected.cc), so a graph whose begin
# state is `_zeros((0, H))` (an unrolled LSTM) still infers once quantized


def _with_ranges(rule, n_data, n_ranges_out=2):
    """A rule over the first ``n_data`` inputs and the first output of a quantized op; the
    remaining inputs (min/max pairs) and outputs are (1,)."""
    def quantized(p, ins, outs):
        ins, outs = list(ins), list(outs)
        din, dout = rule(p, ins[:n_data], outs[:len(outs) - n_ranges_out])
        return (list(din) + [(1,)] * (len(ins) - n_data),
                list(dout) + [(1,)] * n_ranges_out)
    return quantized


def _batch_back(p, ins, outs):
    """Data and output share one shape; known dimensions of either fill the other."""
    s = merge(ins[0], outs[0], "quantized data") if ins[0] is not None and outs[0] is not \
        None and len(ins[0]) == len(outs[0]) else (ins[0] if ins[0] is not None else outs[0])
    return [s], [s]


_RULES_INT8 = {
    "_contrib_quantize_v2": _with_ranges(_batch_back, 1),
    "_contrib_requantize": _with_ranges(_batch_back, 1),
    "_contrib_dequantize": _with_ranges(_batch_back, 1, 0),
    "_contrib_quantized_fully_connected": None,       # filled below (needs the bias count)
}


def _quantized_fc(p, ins, outs):
    n_data = 2 if p.no_bias else 3
    return _with_ranges(fully_connected, n_data)(p, ins, outs)


_RULES_INT8["_contrib_quantized_fully_connected"] = _quantized_fc


_RULES = {
    **_RULES_INT8,
    "_CachedOp": cached_op,
    "Reshape": reshape, "_np_reshape": reshape, "_npx_reshape": reshape, "Flatten": flatten, "slice": slice_rule, "slice_axis": slice_axis,
    "_zeros": creation, "_ones": creation, "_full": creation, "_arange": arange,
    "FullyConnected": fully_connected, "Convolution": convolution, "Deconvolution": deconvolution,
    "Embedding": embedding,
    "Concat": concat, "_rnn_param_concat": rnn_param_concat, "SliceChannel": slice_channel, "transpose": transpose, "pick": pick,
    "dot": dot, "batch_dot": batch_dot, "add_n": same_shape, "_copy": same_shape,
    "BlockGrad": same_shape, "Activation": same_shape, "Dropout": same_shape,
    "SoftmaxActivation": same_shape, "_identity_with_attr_like_rhs": same_shape,
    "amp_cast": same_shape, "amp_multicast": pairwise,
    "where": where, "_np_dot": np_dot, "_npi_zeros": creation, "_npi_ones": creation, "_npi_full": creation,
}


def rule_for(op):
    """The partial rule of ``op``, or None when only complete inputs can be inferred."""
    r = _RULES.get(op.name)
    if r is not None:
        return r
    if op.family == "elemwise" and not op.variadic and len(op.inputs) in (1, 2):
        return broadcast if op.name.startswith("broadcast_") else same_shape
    return None
