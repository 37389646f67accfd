"""Shape ops: reshape, transpose, slicing, joining, splitting, tiling, broadcasting, padding.

MXNet 1.x names, parameters and semantics (src/operator/tensor/matrix_op*.h,
slice_channel, concat, pad, diag_op). Every op returns a fresh array, never a
view of its input: MXNet op outputs own their memory, and an aliasing output
would let an in-place write to it change the input behind autograd's back.

Gradient rules follow NOTE [Gradient rules] in registry.py. The hidden helpers
``_reshape_exact``, ``_slice_scatter``, ``_diag_scatter`` and ``_pad_adjoint``
exist so that every rule is itself made of differentiable registered ops.
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.ops._util import norm_axis, no_bool
from gpunda.ops.registry import OpDef, Param, declare_view, register

_FAMILY = "matrix"


def _err(op, msg):
    return GpundaError(f"Operator {op}: {msg}")


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _listify(r):
    """Multi-output results come back as a list or tuple; one output may come back bare."""
    return list(r) if isinstance(r, (list, tuple)) else [r]


def _axis_in(op, axis, ndim, name="axis"):
    return norm_axis(axis, ndim, op, name) if ndim else _range_error(op, name, axis, ndim)


def _range_error(op, name, value, ndim):
    raise _err(op, f"{name}={value} is out of range for an array with {ndim} dimension(s)")


def _reg(name, compute, **kw):
    kw.setdefault("family", _FAMILY)
    return register(OpDef(name, compute, **kw))


# ----------------------------------------------------------------------------
# Reshape and friends

def _reshape_tokens(spec):
    """Split a shape spec into tokens, keeping each ``-4, d1, d2`` triple together."""
    tokens, i = [], 0
    while i < len(spec):
        if spec[i] == -4:
            if i + 2 >= len(spec):
                raise ValueError("-4 must be followed by two dimensions")
            tokens.append((-4, spec[i + 1], spec[i + 2]))
            i += 3
        else:
            tokens.append((spec[i],))
            i += 1
    return tokens


def infer_reshape(dshape, spec, reverse=False, op="Reshape"):
    """The output shape of MXNet's Reshape for input ``dshape`` and ``shape=spec``.

    Codes: 0 copies the next input dim, -1 infers one dim, -2 copies all
    remaining dims, -3 merges the next two dims, -4 splits the next dim into the
    two values that follow it (one may be -1). ``reverse`` matches codes to dims
    from the right. Raises GpundaError naming the op, the spec and the input shape.
    """
    try:
        return _infer_reshape(tuple(dshape), tuple(spec), reverse)
    except ValueError as e:
        raise _err(op, f"shape={tuple(spec)} does not fit input shape {tuple(dshape)}"
                       f"{' (reverse=True)' if reverse else ''}: {e}") from None


def _infer_reshape(dshape, spec, reverse):
    src = list(dshape)
    if reverse:
        # MXNet flips the raw spec, so a -4 splits using the two values before it
        spec = spec[::-1]
        src.reverse()
    tokens = _reshape_tokens(spec)
    out, j, infer_at = [], 0, None
    for t in tokens:
        d = t[0]
        if d == 0:
            if j >= len(src):
                raise ValueError("0 (copy a dim) has no input dim left to copy")
            out.append(src[j])
            j += 1
        elif d == -1:
            if infer_at is not None:
                raise ValueError("only one dim can be -1 (inferred)")
            infer_at = len(out)
            out.append(1)
            j += 1
        elif d == -2:
            out.extend(src[j:])
            j = len(src)
        elif d == -3:
            if j + 1 >= len(src):
                raise ValueError("-3 (merge two dims) needs two input dims left")
            out.append(src[j] * src[j + 1])
            j += 2
        elif d == -4:
            if j >= len(src):
                raise ValueError("-4 (split a dim) has no input dim left to split")
            d0, d1, d2 = src[j], t[1], t[2]
            j += 1
            if d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0:
                raise ValueError(f"the split dims after -4 must be positive or -1, got {d1}, {d2}")
            if d1 == -1 and d2 == -1:
                raise ValueError("the split dims after -4 cannot both be -1")
            if d1 == -1:
                d1 = d0 // d2
            elif d2 == -1:
                d2 = d0 // d1
            if d1 * d2 != d0:
                raise ValueError(f"split dims {d1}, {d2} do not multiply to input dim {d0}")
            out.extend((d1, d2))
        elif d > 0:
            out.append(d)
            j += 1
        else:
            raise ValueError(f"{d} is not a dimension or a special code (0, -1, -2, -3, -4)")
    total = _prod(dshape)
    if infer_at is not None:
        known = _prod(out)
        if known == 0 or total % known:
            raise ValueError(f"cannot infer the -1 dim: {total} elements do not divide "
                             f"by the product {known} of the other dims")
        out[infer_at] = total // known
    if reverse:
        out.reverse()
    if _prod(out) != total:
        raise ValueError(f"the target shape {tuple(out)} has {_prod(out)} elements but the "
                         f"input has {total}")
    return tuple(out)


def _legacy_target_shape(x, p):
    oshape = list(p.target_shape)
    if p.keep_highest and oshape and x.ndim:
        oshape[0] = x.shape[0]
    start = 1 if p.keep_highest else 0
    zeros = [i for i in range(start, len(oshape)) if oshape[i] == 0]
    if len(zeros) == 1:
        oshape[zeros[0]] = 1
        known = _prod(oshape)
        oshape[zeros[0]] = x.size // known if known else 0
    if _prod(oshape) != x.size:
        raise _err("Reshape", f"target_shape={p.target_shape} does not fit input shape "
                              f"{x.shape}: {tuple(oshape)} has a different number of elements")
    return tuple(oshape)


def _reshape_view(xp, p, x):
    if p.shape:
        shape = infer_reshape(x.shape, p.shape, p.reverse)
    elif p.target_shape:
        shape = _legacy_target_shape(x, p)
    else:
        raise _err("Reshape", f"parameter shape is required (got shape={p.shape}); "
                              f"input shape {x.shape}")
    return x.reshape(shape)


def _reshape(xp, p, x):
    return _reshape_view(xp, p, x).copy()


def _g_reshape_exact(F, p, i, o, g):
    return [F._reshape_exact(g[0], shape=tuple(i[0].shape))]


_reg("Reshape", _reshape, aliases=("reshape",),
     params=[Param("shape", "shape", (), "target shape; may hold 0, -1, -2, -3, -4"),
             Param("reverse", "bool", False, "match special codes from the right"),
             Param("target_shape", "shape", (), "deprecated: use shape"),
             Param("keep_highest", "bool", False, "deprecated: with target_shape")],
     gradient=_g_reshape_exact, save=("inputs",),
     doc="Reshape to `shape`, which may use MXNet's special codes 0, -1, -2, -3, -4.")


def _reshape_exact_view(xp, p, x):
    if _prod(p.shape) != x.size:
        raise _err("_reshape_exact", f"shape={p.shape} does not fit input shape {x.shape}")
    return x.reshape(p.shape)


def _reshape_exact(xp, p, x):
    return _reshape_exact_view(xp, p, x).copy()


_reg("_reshape_exact", _reshape_exact, params=[Param("shape", "shape")],
     gradient=_g_reshape_exact, save=("inputs",), hidden=True,
     doc="Reshape to exactly `shape` (no special codes; zero dims allowed).")


def _reshape_like(xp, p, lhs, rhs):
    def bound(v, default, ndim, name, which):
        if v is None:
            return default
        r = v + ndim if v < 0 else v
        if not 0 <= r <= ndim:
            raise _err("reshape_like", f"{name}={v} is out of range for {which} with "
                                       f"{ndim} dimension(s)")
        return r
    lb = bound(p.lhs_begin, 0, lhs.ndim, "lhs_begin", "lhs")
    le = bound(p.lhs_end, lhs.ndim, lhs.ndim, "lhs_end", "lhs")
    rb = bound(p.rhs_begin, 0, rhs.ndim, "rhs_begin", "rhs")
    re = bound(p.rhs_end, rhs.ndim, rhs.ndim, "rhs_end", "rhs")
    if lb > le or rb > re:
        raise _err("reshape_like", f"begin must not exceed end (lhs {lb}:{le}, rhs {rb}:{re})")
    shape = lhs.shape[:lb] + rhs.shape[rb:re] + lhs.shape[le:]
    if _prod(shape) != lhs.size:
        raise _err("reshape_like", f"lhs shape {lhs.shape} cannot be reshaped to {shape} "
                                   f"(from rhs shape {rhs.shape}): sizes differ")
    return lhs.reshape(shape).copy()


_reg("reshape_like", _reshape_like, inputs=("lhs", "rhs"),
     params=[Param("lhs_begin", "int", None), Param("lhs_end", "int", None),
             Param("rhs_begin", "int", None), Param("rhs_end", "int", None)],
     gradient=lambda F, p, i, o, g: [F._reshape_exact(g[0], shape=tuple(i[0].shape)), None],
     save=("inputs",),
     doc="Reshape lhs to the shape of rhs (or lhs dims [lhs_begin, lhs_end) to rhs dims "
         "[rhs_begin, rhs_end)).")


def _flatten_view(xp, p, x):
    if x.ndim == 0:
        return x.reshape(1, 1)
    return x.reshape(x.shape[0], _prod(x.shape[1:]))


def _flatten(xp, p, x):
    return _flatten_view(xp, p, x).copy()


_reg("Flatten", _flatten, aliases=("flatten",), gradient=_g_reshape_exact, save=("inputs",),
     doc="Collapse all but the first axis: (d1, d2, ..., dk) -> (d1, d2*...*dk).")


def _expand_dims_view(xp, p, x):
    if not -x.ndim - 1 <= p.axis <= x.ndim:
        raise _err("expand_dims", f"axis={p.axis} must be in [{-x.ndim - 1}, {x.ndim}] for "
                                  f"input shape {x.shape}")
    return xp.expand_dims(x, p.axis)


def _expand_dims(xp, p, x):
    return _expand_dims_view(xp, p, x).copy()


_reg("expand_dims", _expand_dims, params=[Param("axis", "int")],
     gradient=_g_reshape_exact, save=("inputs",), doc="Insert a new axis of size 1 at `axis`.")


def _squeeze_view(xp, p, x):
    if p.axis is None:
        shape = tuple(d for d in x.shape if d != 1)
    else:
        axes = (p.axis,) if isinstance(p.axis, int) else p.axis
        norm = []
        for a in axes:
            if not -x.ndim <= a < x.ndim:
                raise _err("squeeze", f"axis={p.axis} is out of range for input shape {x.shape}")
            a %= x.ndim
            if a in norm:
                raise _err("squeeze", f"axis={p.axis} holds axis {a} twice")
            if x.shape[a] != 1:
                raise _err("squeeze", f"axis={p.axis}: cannot squeeze axis {a} of size "
                                      f"{x.shape[a]} (input shape {x.shape}); it must be 1")
            norm.append(a)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in norm)
    if not shape:
        shape = (1,)   # MXNet's squeeze keeps at least one dimension
    return x.reshape(shape)


def _squeeze(xp, p, x):
    return _squeeze_view(xp, p, x).copy()


_reg("squeeze", _squeeze, params=[Param("axis", "axis", None)],
     gradient=_g_reshape_exact, save=("inputs",),
     doc="Remove axes of size 1 (all, or those in `axis`); keeps at least one dimension.")

# ----------------------------------------------------------------------------
# transpose, swapaxes, flip


def _perm(op, axes, ndim):
    if not axes:
        return tuple(reversed(range(ndim)))
    norm = tuple(a % ndim if -ndim <= a < ndim else None for a in axes)
    if len(axes) != ndim or sorted(norm, key=lambda a: -1 if a is None else a) != \
            list(range(ndim)):
        raise _err(op, f"axes={axes} is not a permutation of the {ndim} axes of the input")
    return norm


def _transpose(xp, p, x):
    return xp.transpose(x, _perm("transpose", p.axes, x.ndim)).copy()   # copy() is C-ordered


def _g_transpose(F, p, i, o, g):
    if not p.axes:
        return [F.transpose(g[0])]
    perm = _perm("transpose", p.axes, g[0].ndim)
    inv = [0] * len(perm)
    for k, a in enumerate(perm):
        inv[a] = k
    return [F.transpose(g[0], axes=tuple(inv))]


_reg("transpose", _transpose, params=[Param("axes", "shape", (), "new axis order; () reverses")],
     gradient=_g_transpose, save=(), doc="Permute the axes (reverse them by default).")


def _swapaxes(xp, p, x):
    a = _axis_in("SwapAxis", p.dim1, x.ndim, "dim1")
    b = _axis_in("SwapAxis", p.dim2, x.ndim, "dim2")
    return xp.swapaxes(x, a, b).copy()


_reg("SwapAxis", _swapaxes, aliases=("swapaxes",),
     params=[Param("dim1", "int", 0), Param("dim2", "int", 0)],
     gradient=lambda F, p, i, o, g: [F.SwapAxis(g[0], dim1=p.dim1, dim2=p.dim2)], save=(),
     doc="Interchange two axes.")


def _flip_axes(op, axis, ndim):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    norm = []
    for a in axes:
        # MXNet's reverse takes axes in [0, ndim) only (a negative one is refused)
        if not 0 <= a < ndim:
            raise _err(op, f"axis={axis} is out of range [0, {ndim}) for an array with "
                           f"{ndim} dimension(s)")
        if a % ndim in norm:
            raise _err(op, f"axis={axis} holds axis {a % ndim} twice")
        norm.append(a % ndim)
    return tuple(norm)


def _flip(xp, p, x):
    axes = _flip_axes("reverse", p.axis, x.ndim)
    return xp.flip(x, axes).copy() if axes else x.copy()


_reg("reverse", _flip, aliases=("flip",), params=[Param("axis", "axis")],
     gradient=lambda F, p, i, o, g: [F.reverse(g[0], axis=p.axis)], save=(),
     doc="Reverse the order of elements along `axis` (int or tuple).")

# ----------------------------------------------------------------------------
# slicing


def _slice_tuple(op, shape, begin, end, step):
    """Python slices for MXNet's slice params (None entries take the defaults)."""
    ndim = len(shape)
    if len(begin) != len(end):
        raise _err(op, f"begin={begin} and end={end} must have the same length")
    if len(begin) > ndim:
        raise _err(op, f"begin={begin} has {len(begin)} entries but the input shape {shape} "
                       f"has only {ndim} dimension(s)")
    if step and len(step) != len(begin):
        raise _err(op, f"step={step} must be empty or as long as begin={begin}")
    out = []
    for i in range(len(begin)):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise _err(op, f"step={step}: step[{i}] cannot be 0")
        out.append(slice(begin[i], end[i], s))
    return tuple(out)


def _slice(xp, p, x):
    return x[_slice_tuple("slice", x.shape, p.begin, p.end, p.step)].copy()


_SLICE_PARAMS = [Param("begin", "shape_none", doc="start per axis (None = from the edge)"),
                 Param("end", "shape_none", doc="stop per axis (None = to the edge)"),
                 # step=None is MXNet's unknown-length tuple: no steps, as ()
                 Param("step", "shape_none", (), "step per axis (None = 1)", optional=True)]


def _g_slice(F, p, i, o, g):
    return [F._slice_scatter(g[0], shape=tuple(i[0].shape), begin=p.begin, end=p.end,
                             step=p.step)]


_reg("slice", _slice, aliases=("crop",), params=_SLICE_PARAMS, gradient=_g_slice,
     save=("inputs",),
     doc="Slice [begin, end) with step per axis; negative indices count from the end.")


def _slice_scatter(xp, p, g):
    z = xp.zeros(p.shape, dtype=g.dtype)
    z[_slice_tuple("_slice_scatter", p.shape, p.begin, p.end, p.step)] = g
    return z


_reg("_slice_scatter", _slice_scatter,
     params=[Param("shape", "shape")] + _SLICE_PARAMS,
     gradient=lambda F, p, i, o, g: [F.slice(g[0], begin=p.begin, end=p.end, step=p.step)],
     save=(), hidden=True,
     doc="Zeros of `shape` with the slice (begin, end, step) set to the input (slice's adjoint).")


def _slice_assign(xp, p, lhs, rhs):
    key = _slice_tuple("_slice_assign", lhs.shape, p.begin, p.end, p.step)
    want = lhs[key].shape
    if tuple(rhs.shape) != want:
        raise _err("_slice_assign", f"rhs shape {tuple(rhs.shape)} must equal the slice shape "
                                    f"{want} of lhs {tuple(lhs.shape)}")
    if lhs.dtype != rhs.dtype:
        raise _err("_slice_assign", f"rhs dtype {rhs.dtype} must equal lhs dtype {lhs.dtype}")
    out = lhs.copy()
    out[key] = rhs
    return out


def _slice_assign_scalar(xp, p, x):
    out = x.copy()
    out[_slice_tuple("_slice_assign_scalar", x.shape, p.begin, p.end, p.step)] = p.scalar
    return out


def _g_slice_assign_lhs(F, p, g):
    # the assigned region came from rhs (or the scalar): lhs gets no gradient there
    return F._slice_assign_scalar(g, scalar=0.0, begin=p.begin, end=p.end, step=p.step)


_reg("_slice_assign", _slice_assign, aliases=("_crop_assign",), params=_SLICE_PARAMS,
     inputs=("lhs", "rhs"),
     gradient=lambda F, p, i, o, g: [_g_slice_assign_lhs(F, p, g[0]),
                                     F.slice(g[0], begin=p.begin, end=p.end, step=p.step)],
     save=(),
     doc="lhs with the slice [begin, end) (step) replaced by rhs (a copy).")
_reg("_slice_assign_scalar", _slice_assign_scalar, aliases=("_crop_assign_scalar",),
     params=[Param("scalar", "float", 0.0, "the value to write")] + _SLICE_PARAMS,
     gradient=lambda F, p, i, o, g: [_g_slice_assign_lhs(F, p, g[0])], save=(),
     doc="data with the slice [begin, end) (step) set to `scalar` (a copy).")


def _slice_axis_range(x, p):
    ax = _axis_in("slice_axis", p.axis, x.ndim)
    n = x.shape[ax]
    b = p.begin + n if p.begin < 0 else p.begin
    e = n if p.end is None else (p.end + n if p.end < 0 else p.end)
    if n == 0:
        return ax, 0, 0
    if not 0 <= b < n or not 0 < e <= n or b >= e:
        raise _err("slice_axis", f"begin={p.begin}, end={p.end} do not select a non-empty "
                                 f"range of axis {ax} with size {n} (input shape {x.shape})")
    return ax, b, e


def _slice_axis_view(xp, p, x):
    ax, b, e = _slice_axis_range(x, p)
    return x[(slice(None),) * ax + (slice(b, e),)]


def _slice_axis(xp, p, x):
    return _slice_axis_view(xp, p, x).copy()


def _g_slice_axis(F, p, i, o, g):
    x = i[0]
    ax = p.axis % x.ndim
    b = p.begin + x.shape[ax] if p.begin < 0 else p.begin
    e = b + g[0].shape[ax]
    return [F._slice_scatter(g[0], shape=tuple(x.shape), begin=(None,) * ax + (b,),
                             end=(None,) * ax + (e,))]


_reg("slice_axis", _slice_axis,
     params=[Param("axis", "int"), Param("begin", "int"), Param("end", "int", optional=True)],
     gradient=_g_slice_axis, save=("inputs",),
     doc="Slice [begin, end) along one axis (end None = to the end).")


def _slice_like_end(x, like, axes):
    if not axes:
        if x.ndim != like.ndim:
            raise _err("slice_like", f"without axes the inputs need the same ndim, got data "
                                     f"shape {x.shape} and shape_like shape {like.shape}")
        axes = range(x.ndim)
    end = list(x.shape)
    for a in axes:
        if not -x.ndim <= a < x.ndim or (a % x.ndim) >= like.ndim:
            raise _err("slice_like", f"axes={tuple(axes)}: axis {a} is out of range for data "
                                     f"shape {x.shape} and shape_like shape {like.shape}")
        a %= x.ndim
        if like.shape[a] > x.shape[a]:
            raise _err("slice_like", f"axis {a}: shape_like size {like.shape[a]} exceeds data "
                                     f"size {x.shape[a]} (data {x.shape}, shape_like {like.shape})")
        end[a] = like.shape[a]
    return tuple(end)


def _slice_like(xp, p, x, like):
    end = _slice_like_end(x, like, p.axes)
    return x[tuple(slice(0, e) for e in end)].copy()


_reg("slice_like", _slice_like, inputs=("data", "shape_like"),
     params=[Param("axes", "shape", (), "axes to slice; () = all")],
     gradient=lambda F, p, i, o, g: [
         F._slice_scatter(g[0], shape=tuple(i[0].shape), begin=(0,) * g[0].ndim,
                          end=tuple(g[0].shape)), None],
     save=("inputs",), doc="Slice data from 0 to the sizes of shape_like along `axes`.")

# ----------------------------------------------------------------------------
# joining and splitting


def _check_num_args(op, p, xs):
    if p.num_args < 1:
        raise _err(op, f"num_args={p.num_args} must be at least 1")
    if len(xs) != p.num_args:
        raise _err(op, f"num_args={p.num_args} but {len(xs)} inputs were given")


def _concat(xp, p, *xs):
    _check_num_args("Concat", p, xs)
    x0 = xs[0]
    ax = _axis_in("Concat", p.dim, x0.ndim, "dim")
    for k, x in enumerate(xs[1:], 1):
        if x.ndim != x0.ndim or any(a != b for j, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if j != ax):
            raise _err("Concat", f"input arg{k} has shape {x.shape} but arg0 has shape "
                                 f"{x0.shape}; all dims except dim={p.dim} must match")
        if x.dtype != x0.dtype:
            raise _err("Concat", f"input arg{k} has dtype {x.dtype} but arg0 has {x0.dtype}")
    return xp.concatenate(xs, axis=ax)


def _g_concat(F, p, i, o, g):
    ax = p.dim % i[0].ndim
    grads, off = [], 0
    for x in i:
        n = x.shape[ax]
        grads.append(F.slice(g[0], begin=(None,) * ax + (off,), end=(None,) * ax + (off + n,)))
        off += n
    return grads


_reg("Concat", _concat, aliases=("concat",),
     inputs=lambda p: tuple(f"arg{i}" for i in range(p.num_args)), key_var_num_args="num_args",
     params=[Param("num_args", "int", doc="number of inputs"),
             Param("dim", "int", 1, "axis to join along")],
     gradient=_g_concat, save=("inputs",), doc="Join arrays along an existing axis `dim`.")
# what MXNet's gluon.rnn layers join their flattened weights with (so in every export of an
# LSTM/GRU layer): Concat's kernel, its own name in graphs
_reg("_rnn_param_concat", _concat, aliases=("_npi_rnn_param_concat",), hidden=True,
     inputs=lambda p: tuple(f"arg{i}" for i in range(p.num_args)), key_var_num_args="num_args",
     params=[Param("num_args", "int", doc="number of inputs"),
             Param("dim", "int", 1, "axis to join along")],
     gradient=_g_concat, save=("inputs",),
     doc="Join RNN parameters along `dim` (Concat, as MXNet's gluon.rnn layers name it).")


def _stack(xp, p, *xs):
    _check_num_args("stack", p, xs)
    x0 = xs[0]
    if not -x0.ndim - 1 <= p.axis <= x0.ndim:
        raise _err("stack", f"axis={p.axis} must be in [{-x0.ndim - 1}, {x0.ndim}] for "
                            f"inputs of shape {x0.shape}")
    for k, x in enumerate(xs[1:], 1):
        if x.shape != x0.shape:
            raise _err("stack", f"input arg{k} has shape {x.shape} but arg0 has shape "
                                f"{x0.shape}; all inputs must have the same shape")
        if x.dtype != x0.dtype:
            raise _err("stack", f"input arg{k} has dtype {x.dtype} but arg0 has {x0.dtype}")
    return xp.stack(xs, axis=p.axis)


def _g_stack(F, p, i, o, g):
    ax = p.axis % g[0].ndim
    return _listify(F.SliceChannel(g[0], num_outputs=p.num_args, axis=ax, squeeze_axis=True))


_reg("stack", _stack, inputs=lambda p: tuple(f"arg{i}" for i in range(p.num_args)),
     key_var_num_args="num_args",
     params=[Param("axis", "int", 0, "position of the new axis"),
             Param("num_args", "int", doc="number of inputs")],
     gradient=_g_stack, save=(), doc="Join same-shape arrays along a new axis.")


def _split_view(xp, p, x):
    if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
        raise no_bool('SliceChannel', "data")
    n = p.num_outputs
    if n < 1:
        raise _err("SliceChannel", f"num_outputs={n} must be at least 1")
    ax = _axis_in("SliceChannel", p.axis, x.ndim)
    size = x.shape[ax]
    if size % n:
        raise _err("SliceChannel", f"num_outputs={n} does not evenly divide axis {ax} of size "
                                   f"{size} (input shape {x.shape})")
    if p.squeeze_axis and size != n:
        raise _err("SliceChannel", f"squeeze_axis=True needs input.shape[axis] == num_outputs, "
                                   f"got size {size} and num_outputs={n}")
    step = size // n
    lead = (slice(None),) * ax
    parts = []
    for k in range(n):
        part = x[lead + (slice(k * step, (k + 1) * step),)]
        if p.squeeze_axis:
            part = part.reshape(x.shape[:ax] + x.shape[ax + 1:])
        parts.append(part)
    return tuple(parts)


def _split(xp, p, x):
    return tuple(part.copy() for part in _split_view(xp, p, x))


def _g_split(F, p, i, o, g):
    # parts are equal in shape, so an unused part's gradient is zeros like a used one's
    present = next(x for x in g if x is not None)
    gs = [x if x is not None else F.zeros_like(present) for x in g]
    n = p.num_outputs
    ax = p.axis % (gs[0].ndim + (1 if p.squeeze_axis else 0))
    if p.squeeze_axis:
        return [F.stack(*gs, axis=ax, num_args=n)]
    return [F.Concat(*gs, dim=ax, num_args=n)]


_reg("SliceChannel", _split, aliases=("split",),
     params=[Param("num_outputs", "int", doc="number of equal parts"),
             Param("axis", "int", 1, "axis to split"),
             Param("squeeze_axis", "bool", False, "drop the split axis (parts of size 1)")],
     num_outputs=lambda p: p.num_outputs, gradient=_g_split, save=(),
     # a legacy op: its parts are output0, output1, ... even when there is one
     output_names=lambda p: [f"output{i}" for i in range(p.num_outputs)],
     doc="Split into `num_outputs` equal parts along `axis`.")


def _split_v2_bounds(p, size):
    if p.sections > 0:
        if size % p.sections:
            raise _err("_split_v2", f"sections={p.sections} does not evenly divide the axis "
                                    f"of size {size}")
        step = size // p.sections
        return [k * step for k in range(p.sections + 1)]
    idx = list(p.indices)
    if not idx or any(b > e for b, e in zip(idx, idx[1:])) or idx[-1] > size:
        raise _err("_split_v2", f"indices={tuple(idx)} must be non-decreasing and at most the "
                                f"axis size {size}")
    return idx + [size]


def _split_v2(xp, p, x):
    ax = _axis_in("_split_v2", p.axis, x.ndim)
    bounds = _split_v2_bounds(p, x.shape[ax])
    lead = (slice(None),) * ax
    parts = []
    for b, e in zip(bounds[:-1], bounds[1:]):
        part = x[lead + (slice(b, e),)]
        if p.squeeze_axis:
            if e - b != 1:
                raise _err("_split_v2", f"squeeze_axis=True needs parts of length 1, got {e - b}")
            part = part.reshape(x.shape[:ax] + x.shape[ax + 1:])
        parts.append(part.copy())
    return tuple(parts)


def _g_split_v2(F, p, i, o, g):
    gs = [gk if gk is not None else F.zeros_like(ok) for gk, ok in zip(g, o)]
    ax = p.axis % (gs[0].ndim + (1 if p.squeeze_axis else 0))
    if p.squeeze_axis:
        gs = [F.expand_dims(gk, axis=ax) for gk in gs]
    return [F.Concat(*gs, dim=ax, num_args=len(gs)) if len(gs) > 1 else gs[0]]


_reg("_split_v2", _split_v2,
     params=[Param("indices", "shape", doc="start of each part (the first is 0)"),
             Param("axis", "int", 1), Param("squeeze_axis", "bool", False),
             Param("sections", "int", 0, "equal parts (used when > 0)")],
     num_outputs=lambda p: p.sections if p.sections > 0 else len(p.indices),
     gradient=_g_split_v2, save=("outputs",), hidden=True,
     doc="Split at `indices` (or into `sections` equal parts) along `axis`; the op behind "
         "split_v2.")


# NumPy's hsplit/dsplit (MXNet's _npi_hsplit, _npi_dsplit): _split_v2's parameters, with
# the axis fixed by the op (hsplit: 1, or 0 for 1-D input; dsplit: 2) whatever `axis` says


def _fixed_axis(name, ndim):
    if name == "_npi_hsplit":
        if ndim < 1:
            raise _err(name, "hsplit only works on arrays of 1 or more dimensions")
        return 1 if ndim > 1 else 0
    if ndim < 3:
        raise _err(name, f"dsplit only works on arrays of 3 or more dimensions, got {ndim}")
    return 2


def _np_split_op(name):
    def compute(xp, p, x):
        return _split_v2(xp, p.replace(axis=_fixed_axis(name, x.ndim)), x)

    def grad(F, p, i, o, g):
        ndim = o[0].ndim + (1 if p.squeeze_axis else 0)
        return _g_split_v2(F, p.replace(axis=_fixed_axis(name, ndim)), i, o, g)

    _reg(name, compute,
         params=[Param("indices", "shape", doc="start of each part (the first is 0)"),
                 Param("axis", "int", 1, "ignored: the op fixes the axis"),
                 Param("squeeze_axis", "bool", False),
                 Param("sections", "int", 0, "equal parts (used when > 0)")],
         num_outputs=lambda p: p.sections if p.sections > 0 else len(p.indices),
         gradient=grad, save=("outputs",), hidden=True,
         doc=f"NumPy's {name[5:]}: _split_v2 along its fixed axis.")


_np_split_op("_npi_hsplit")
_np_split_op("_npi_dsplit")

# ----------------------------------------------------------------------------
# tile, repeat


def _tile(xp, p, x):
    if any(r < 0 for r in p.reps):
        raise _err("tile", f"reps={p.reps} must not hold negative values")
    if 0 in p.reps:
        from gpunda.util import is_np_shape
        if not is_np_shape():    # MXNet's legacy shapes read a 0 as an unknown size
            raise _err("tile", f"reps={p.reps} holds 0, an unknown size outside "
                               f"mx.np_shape(); zero-size tiling needs np_shape")
    if not p.reps:
        return x.copy()
    return xp.tile(x, p.reps)


def _g_tile(F, p, i, o, g):
    x, gy = i[0], g[0]
    if not p.reps:
        return [gy]
    d = max(x.ndim, len(p.reps))
    xs = (1,) * (d - x.ndim) + tuple(x.shape)
    rs = (1,) * (d - len(p.reps)) + tuple(p.reps)
    inter, kept = [], []
    for r, s in zip(rs, xs):
        inter += [r, s]
        kept += [1, s]
    # the output index along an axis is rep * s + j, so (rep, j) is a row-major split
    folded = F._sum_to(F._reshape_exact(gy, shape=tuple(inter)), shape=tuple(kept))
    return [F._reshape_exact(folded, shape=tuple(x.shape))]


_reg("tile", _tile, params=[Param("reps", "shape", doc="repetitions per axis")],
     gradient=_g_tile, save=("inputs",), doc="Repeat the whole array `reps` times per axis.")


def _repeat(xp, p, x):
    if p.repeats < 0:
        raise _err("repeat", f"repeats={p.repeats} must be non-negative")
    if p.repeats == 0:
        # MXNet's RepeatOpShape: zero repeats give an empty 1-D array, whatever the axis
        return xp.zeros((0,), x.dtype)
    if p.axis is None:
        return xp.repeat(x.reshape(-1), p.repeats)
    ax = _axis_in("repeat", p.axis, x.ndim)
    return xp.repeat(x, p.repeats, axis=ax)


def _g_repeat(F, p, i, o, g):
    x, gy, r = i[0], g[0], p.repeats
    if r == 0:
        return [F.zeros_like(x)]
    if p.axis is None:
        n = _prod(x.shape)
        split, kept = (n, r), (n, 1)
    else:
        ax = p.axis % x.ndim
        pre, post = tuple(x.shape[:ax]), tuple(x.shape[ax + 1:])
        split = pre + (x.shape[ax], r) + post
        kept = pre + (x.shape[ax], 1) + post
    folded = F._sum_to(F._reshape_exact(gy, shape=split), shape=kept)
    return [F._reshape_exact(folded, shape=tuple(x.shape))]


_reg("repeat", _repeat,
     params=[Param("repeats", "int", doc="copies of each element"),
             Param("axis", "int", None, "axis to repeat along; None flattens first")],
     gradient=_g_repeat, save=("inputs",), doc="Repeat each element `repeats` times.")

# ----------------------------------------------------------------------------
# broadcasting


def _broadcast_to(xp, p, x):
    if len(p.shape) != x.ndim:
        raise _err("broadcast_to", f"shape={p.shape} has {len(p.shape)} dims but the input "
                                   f"shape {x.shape} has {x.ndim}; they must match")
    out = []
    for d, s in zip(x.shape, p.shape):
        if s == 0:
            out.append(d)       # 0 keeps the input dim
        elif d == s or d == 1:
            out.append(s)
        else:
            raise _err("broadcast_to", f"cannot broadcast input shape {x.shape} to "
                                       f"shape={p.shape}: dim {d} is neither 1 nor {s}")
    return xp.broadcast_to(x, tuple(out)).copy()


def _g_broadcast(F, p, i, o, g):
    shape = tuple(i[0].shape)
    gy = g[0]
    if tuple(gy.shape) == shape:
        return [gy] + [None] * (len(i) - 1)
    return [F._sum_to(gy, shape=shape)] + [None] * (len(i) - 1)


_reg("broadcast_to", _broadcast_to,
     params=[Param("shape", "shape", (), "target shape; 0 keeps the input dim")],
     gradient=_g_broadcast, save=("inputs",),
     doc="Broadcast size-1 axes to `shape` (same number of dims).")


def _broadcast_like(xp, p, lhs, rhs):
    if p.lhs_axes is None and p.rhs_axes is None:
        if lhs.ndim != rhs.ndim:
            raise _err("broadcast_like", f"lhs shape {lhs.shape} cannot be broadcast to rhs "
                                         f"shape {rhs.shape}: ndims differ")
        pairs = [(k, k) for k in range(lhs.ndim)]
    else:
        if p.lhs_axes is None or p.rhs_axes is None or len(p.lhs_axes) != len(p.rhs_axes):
            raise _err("broadcast_like", f"lhs_axes={p.lhs_axes} and rhs_axes={p.rhs_axes} "
                                         f"must both be given with the same length")
        if not p.lhs_axes:
            raise _err("broadcast_like", "lhs_axes=() and rhs_axes=(): an empty axes tuple is "
                                         "not allowed (pass None to broadcast every axis)")
        pairs = []
        for la, ra in zip(p.lhs_axes, p.rhs_axes):
            if not -lhs.ndim <= la < lhs.ndim:
                raise _err("broadcast_like", f"lhs_axes={p.lhs_axes}: {la} is out of range for "
                                             f"lhs shape {lhs.shape}")
            if not -rhs.ndim <= ra < rhs.ndim:
                raise _err("broadcast_like", f"rhs_axes={p.rhs_axes}: {ra} is out of range for "
                                             f"rhs shape {rhs.shape}")
            pairs.append((la % lhs.ndim, ra % rhs.ndim))
    out = list(lhs.shape)
    for la, ra in pairs:
        d, s = lhs.shape[la], rhs.shape[ra]
        if d != s and d != 1:
            raise _err("broadcast_like", f"cannot broadcast lhs shape {lhs.shape} like rhs "
                                         f"shape {rhs.shape}: lhs axis {la} has size {d}, "
                                         f"neither 1 nor {s}")
        out[la] = s
    return xp.broadcast_to(lhs, tuple(out)).copy()


_reg("broadcast_like", _broadcast_like, inputs=("lhs", "rhs"),
     params=[Param("lhs_axes", "shape", None, "lhs axes to broadcast"),
             Param("rhs_axes", "shape", None, "rhs axes giving the sizes")],
     gradient=_g_broadcast, save=("inputs",),
     doc="Broadcast lhs to the shape of rhs (or only lhs_axes to rhs_axes sizes).")


def _broadcast_axis(xp, p, x):
    if len(p.axis) != len(p.size):
        raise _err("broadcast_axis", f"axis={p.axis} and size={p.size} must have the same length")
    out = list(x.shape)
    for a, s in zip(p.axis, p.size):
        if not -x.ndim <= a < x.ndim:
            raise _err("broadcast_axis", f"axis={p.axis}: {a} is out of range for input shape "
                                         f"{x.shape}")
        a %= x.ndim
        if x.shape[a] != 1:
            raise _err("broadcast_axis", f"axis={p.axis}: axis {a} has size {x.shape[a]}; only "
                                         f"size-1 axes can be broadcast (input shape {x.shape})")
        if s < 0:
            raise _err("broadcast_axis", f"size={p.size} must not hold negative values")
        out[a] = s
    return xp.broadcast_to(x, tuple(out)).copy()


_reg("broadcast_axis", _broadcast_axis, aliases=("broadcast_axes",),
     params=[Param("axis", "shape", (), "size-1 axes to broadcast"),
             Param("size", "shape", (), "their new sizes")],
     gradient=_g_broadcast, save=("inputs",), doc="Broadcast size-1 axes to the given sizes.")

# ----------------------------------------------------------------------------
# diag


def _diag_axes(x, p):
    a1 = _axis_in("diag", p.axis1, x.ndim, "axis1")
    a2 = _axis_in("diag", p.axis2, x.ndim, "axis2")
    if a1 == a2:
        raise _err("diag", f"axis1={p.axis1} and axis2={p.axis2} name the same axis")
    return a1, a2


def _diag(xp, p, x):
    if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
        raise no_bool('diag', "data")
    if x.ndim == 0:
        raise _err("diag", "input must have at least one dimension, got a 0-d array")
    if x.ndim == 1:
        return xp.diag(x, p.k)
    a1, a2 = _diag_axes(x, p)
    if p.k > x.shape[a2] or -p.k > x.shape[a1]:
        raise _err("diag", f"k={p.k} is outside a ({x.shape[a1]}, {x.shape[a2]}) matrix "
                           f"(the diagonal would have negative length)")
    return xp.diagonal(x, p.k, a1, a2).copy()


def _g_diag(F, p, i, o, g):
    x = i[0]
    if x.ndim == 1:
        return [F.diag(g[0], k=p.k)]
    return [F._diag_scatter(g[0], shape=tuple(x.shape), k=p.k, axis1=p.axis1, axis2=p.axis2)]


_DIAG_PARAMS = [Param("k", "int", 0, "diagonal offset"), Param("axis1", "int", 0),
                Param("axis2", "int", 1)]
_reg("diag", _diag, params=_DIAG_PARAMS, gradient=_g_diag, save=("inputs",),
     doc="1-D input: a matrix with it on diagonal k. N-D: diagonal k over (axis1, axis2) "
         "as the last axis.")


def _diag_scatter(xp, p, g):
    z = xp.zeros(p.shape, dtype=g.dtype)
    a1 = p.axis1 % len(p.shape)
    a2 = p.axis2 % len(p.shape)
    zt = xp.moveaxis(z, (a1, a2), (-2, -1))   # a view: writes land in z
    idx = xp.arange(g.shape[-1])
    zt[..., idx + max(-p.k, 0), idx + max(p.k, 0)] = g
    return z


_reg("_diag_scatter", _diag_scatter, params=[Param("shape", "shape")] + _DIAG_PARAMS,
     gradient=lambda F, p, i, o, g: [F.diag(g[0], k=p.k, axis1=p.axis1, axis2=p.axis2)],
     save=(), hidden=True,
     doc="Zeros of `shape` with diagonal k set to the input (diag's adjoint).")

# ----------------------------------------------------------------------------
# pad


def _pad_pairs(x, p):
    pw = p.pad_width
    if x.ndim not in (4, 5):
        raise _err("Pad", f"input must be 4-D or 5-D, got shape {x.shape}")
    if len(pw) != 2 * x.ndim:
        raise _err("Pad", f"pad_width={pw} must have 2*ndim = {2 * x.ndim} entries for input "
                          f"shape {x.shape}")
    if any(v != 0 for v in pw[:4]):
        raise _err("Pad", f"pad_width={pw}: padding of the first two axes is not supported; "
                          f"its first four entries must be 0")
    if any(v < 0 for v in pw):
        raise _err("Pad", f"pad_width={pw} must not hold negative values")
    pairs = tuple((pw[2 * k], pw[2 * k + 1]) for k in range(x.ndim))
    for k, (b, e) in enumerate(pairs):
        if p.mode == "reflect" and (b >= x.shape[k] or e >= x.shape[k]):
            raise _err("Pad", f"pad_width={pw}: reflect padding of axis {k} must be smaller "
                              f"than its size {x.shape[k]}")
        if p.mode == "edge" and (b or e) and x.shape[k] == 0:
            raise _err("Pad", f"pad_width={pw}: edge padding of empty axis {k}")
    return pairs


def _pad(xp, p, x):
    pairs = _pad_pairs(x, p)
    if p.mode == "constant":
        cv = p.constant_value if x.dtype.kind in "fc" else x.dtype.type(p.constant_value)
        return xp.pad(x, pairs, mode="constant", constant_values=cv)
    return xp.pad(x, pairs, mode=p.mode)


_PAD_PARAMS = [Param("mode", "enum", choices=("constant", "edge", "reflect")),
               Param("pad_width", "shape", doc="(before_1, after_1, ..., before_N, after_N)")]

_reg("Pad", _pad, aliases=("pad",),
     params=_PAD_PARAMS + [Param("constant_value", "float", 0.0, "fill for mode='constant'")],
     gradient=lambda F, p, i, o, g: [F._pad_adjoint(g[0], mode=p.mode, pad_width=p.pad_width)],
     save=(), doc="Pad a 4-D or 5-D array (last two or three axes) by constant, edge or reflect.")


def _pad_adjoint(xp, p, g):
    """Fold a padded gradient back onto the unpadded array, axis by axis."""
    r = g
    pw = p.pad_width
    for ax in reversed(range(g.ndim)):
        b, e = pw[2 * ax], pw[2 * ax + 1]
        if not (b or e):
            continue
        lead = (slice(None),) * ax
        n = r.shape[ax] - b - e
        mid = r[lead + (slice(b, b + n),)].copy()
        if p.mode == "edge":
            if b:
                mid[lead + (slice(0, 1),)] += r[lead + (slice(0, b),)].sum(axis=ax, keepdims=True)
            if e:
                mid[lead + (slice(n - 1, n),)] += r[lead + (slice(b + n, None),)].sum(
                    axis=ax, keepdims=True)
        elif p.mode == "reflect":
            # padded[j] = x[b - j] on the left, padded[b + n + j] = x[n - 2 - j] on the right
            if b:
                mid[lead + (slice(1, b + 1),)] += xp.flip(r[lead + (slice(0, b),)], ax)
            if e:
                mid[lead + (slice(n - 1 - e, n - 1),)] += xp.flip(
                    r[lead + (slice(b + n, None),)], ax)
        r = mid
    return r if r is not g else r.copy()


_reg("_pad_adjoint", _pad_adjoint, params=_PAD_PARAMS,
     gradient=lambda F, p, i, o, g: [F.Pad(g[0], mode=p.mode, pad_width=p.pad_width,
                                           constant_value=0.0)],
     save=(), hidden=True, doc="The adjoint of Pad's linear part (its gradient).")

# ----------------------------------------------------------------------------
# depth_to_space, space_to_depth


def _block_check(op, x, b):
    if b < 1:
        raise _err(op, f"block_size={b} must be positive")
    if x.ndim != 4:
        raise _err(op, f"input must be 4-D (N, C, H, W), got shape {x.shape}")
    if 0 in x.shape:
        # MXNet's shape check rejects empty batch, depth and spatial dims alike
        raise _err(op, f"input shape {x.shape} has a zero dimension; every dim must be non-zero")


def _depth_to_space(xp, p, x):
    b = p.block_size
    _block_check("depth_to_space", x, b)
    n, c, h, w = x.shape
    if c % (b * b):
        raise _err("depth_to_space", f"block_size={b}: channels {c} must be divisible by "
                                     f"block_size**2 = {b * b} (input shape {x.shape})")
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return xp.ascontiguousarray(y).reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth(xp, p, x):
    b = p.block_size
    _block_check("space_to_depth", x, b)
    n, c, h, w = x.shape
    if h % b or w % b:
        raise _err("space_to_depth", f"block_size={b} must divide height {h} and width {w} "
                                     f"(input shape {x.shape})")
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return xp.ascontiguousarray(y).reshape(n, c * b * b, h // b, w // b)


_reg("depth_to_space", _depth_to_space, params=[Param("block_size", "int")],
     gradient=lambda F, p, i, o, g: [F.space_to_depth(g[0], block_size=p.block_size)],
     save=(), doc="Move depth (channel) blocks into spatial blocks (DCR order).")
_reg("space_to_depth", _space_to_depth, params=[Param("block_size", "int")],
     gradient=lambda F, p, i, o, g: [F.depth_to_space(g[0], block_size=p.block_size)],
     save=(), doc="Move spatial blocks into depth (inverse of depth_to_space).")

# ----------------------------------------------------------------------------
# shape_array, size_array

_HOST_COPY = "builds its value on the host (host-to-device copy)"

_reg("shape_array", lambda xp, p, x: xp.asarray(x.shape, dtype="int64").reshape(x.ndim),
     nondiff=True, save=(), capture=_HOST_COPY, doc="The shape of the input as a 1-D int64 array.")
_reg("size_array", lambda xp, p, x: xp.asarray([x.size], dtype="int64"),
     nondiff=True, save=(), capture=_HOST_COPY,
     doc="The number of elements of the input as a (1,) int64 array.")

# ----------------------------------------------------------------------------
# views: the same results sharing the input's memory, for CachedOp's fused plans on a GPU
# (NOTE [View steps] in _engine/fusion/views.py); imperative calls keep MXNet's copies

for _name, _fn in (("Reshape", _reshape_view), ("_reshape_exact", _reshape_exact_view),
                  ("Flatten", _flatten_view), ("expand_dims", _expand_dims_view),
                  ("squeeze", _squeeze_view)):
    declare_view(_name, _fn, reshape_grad=True)
declare_view("SliceChannel", _split_view)
declare_view("slice_axis", _slice_axis_view)
