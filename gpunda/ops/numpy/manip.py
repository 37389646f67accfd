"""``mx.np`` array manipulation ops: reshape, transpose, concatenate/stack/split,
tile/repeat, flip/roll/rot90, pad, take, where, tril/triu, diag, insert/delete, ...

NOTE [Index-map gradients]
Every op here moves or copies elements and never combines them: each output element
is one element of one differentiable input, or a constant. Such an op is linear, and
its gradient is found without a rule per op: run the same compute on *index arrays*
(input k's elements numbered ``offset_k + 1 ...``; the constants it inserts are 0),
which gives, for each output element, the number of the input element it came from;
the gradient is then a ``bincount`` of the head gradients by those numbers
(``_npi_index_grad``). Its own gradient is the op applied to the cotangents
(``_npi_index_apply``), so second derivatives come free too. An op whose constants
are not zero (pad's ``constant_values``) says which params to use for the index pass.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, GpundaIndexError, GpundaValueError
from gpunda.ops.registry import OpDef, Param, register, get_op
from gpunda.ops.numpy.elemwise import np_result_type
from gpunda.ops._util import is_view_of

_I64 = np.dtype("int64")


def _listify(r):
    return list(r) if isinstance(r, (list, tuple)) else [r]


def _index_inputs(xp, op, p, xs):
    """The op's inputs with the differentiable ones replaced by numbered index arrays."""
    diff = op.np_diff(p, len(xs))
    args, sizes, off = [], [], 1
    for k, x in enumerate(xs):
        if k in diff:
            args.append(xp.arange(off, off + x.size, dtype=_I64).reshape(x.shape))
            sizes.append((k, off, x.size, x.shape))
            off += x.size
        else:
            args.append(x)
    return args, sizes, off


def _index_grad(xp, q, *arrs):
    op = get_op(q.op)
    g, xs = arrs[:q.nout], arrs[q.nout:]
    args, sizes, total = _index_inputs(xp, op, q.p, xs)
    maps = _listify(op.compute(xp, op.np_index_params(q.p), *args))
    dt = next((a.dtype for a in g), np.dtype("float32"))
    acc = xp.zeros(total, dtype=np.float64)
    for m, gk in zip(maps, g):
        m = xp.asarray(m).reshape(-1)
        acc += xp.bincount(m, weights=gk.reshape(-1).astype(np.float64), minlength=total)[:total] \
            if m.size else 0
    out = []
    for k, x in enumerate(xs):
        hit = [s for s in sizes if s[0] == k]
        if hit:
            _, off, n, shape = hit[0]
            out.append(acc[off:off + n].reshape(shape).astype(dt))
        else:
            out.append(xp.zeros(x.shape, dtype=x.dtype))
    return out


def _index_apply(xp, q, *arrs):
    op = get_op(q.op)
    n = len(arrs) // 2
    cot, xs = arrs[:n], arrs[n:]
    diff = op.np_diff(q.p, n)
    args = [cot[k].astype(np.result_type(*[cot[j].dtype for j in diff])) if k in diff else xs[k]
            for k in range(n)]
    return _listify(op.compute(xp, op.np_index_params(q.p), *args))


def _index_grad_rule(F, q, i, o, g):
    op = get_op(q.op)
    xs = i[q.nout:]
    r = F._npi_index_apply(*g, *xs, op=q.op, p=q.p, nout=len(xs), nres=q.nout)
    r = r if isinstance(r, list) else [r]
    return r + [None] * len(xs)


def _index_apply_rule(F, q, i, o, g):
    n = len(i) // 2
    xs = i[n:]
    r = F._npi_index_grad(*g, *xs, op=q.op, p=q.p, nout=len(g), nres=n)
    r = r if isinstance(r, list) else [r]
    return r + [None] * n


_META = [Param("op", "str"), Param("p", "any"), Param("nout", "int"), Param("nres", "int")]
register(OpDef("_npi_index_grad", _index_grad, params=_META,
               inputs=lambda q: tuple(f"g{k}" for k in range(q.nout)) +
               tuple(f"x{k}" for k in range(q.nres)),
               num_outputs=lambda q: q.nres, gradient=_index_grad_rule, save=("inputs",),
               family="np_manip", hidden=True,
               doc="Gradient of an element-moving op (NOTE [Index-map gradients])."))
register(OpDef("_npi_index_apply", _index_apply, params=_META,
               inputs=lambda q: tuple(f"c{k}" for k in range(q.nout)) +
               tuple(f"x{k}" for k in range(q.nout)),
               num_outputs=lambda q: q.nres, gradient=_index_apply_rule, save=("inputs",),
               family="np_manip", hidden=True,
               doc="An element-moving op applied to cotangents (second order)."))


def _all_diff(p, n):
    return range(n)


def _owned(compute):
    """``compute`` with every output that is an input or a backend view of one copied:
    MXNet's ops write fresh memory, so ``np.reshape``/``transpose``/``squeeze``/... of an
    ``mx.np`` array are copies there (writes to them never reach the input), while
    NumPy and CuPy answer them with views."""
    def run(xp, p, *xs):
        r = compute(xp, p, *xs)
        if isinstance(r, (list, tuple)):
            return [_fresh(o, xs) for o in r]
        return _fresh(r, xs)
    return run


def _fresh(o, xs):
    for x in xs:
        if o is x or is_view_of(o, x):
            return o.copy()
    return o


def moving(name, compute, params=(), inputs=("a",), num_outputs=1, diff=None,
           index_params=None, key_var_num_args=None, doc=""):
    """Register an element-moving op; its gradient is NOTE [Index-map gradients].
    Outputs never share memory with inputs (``_owned``)."""
    compute = _owned(compute)
    def rule(F, p, i, o, g):
        nin = len(i)
        r = F._npi_index_grad(*g, *i, op=name, p=p, nout=len(g), nres=nin)
        r = r if isinstance(r, list) else [r]
        d = set(op.np_diff(p, nin))
        return [r[k] if k in d else None for k in range(nin)]
    op = OpDef(name, compute, params=params, inputs=inputs, num_outputs=num_outputs,
               gradient=rule, save=("inputs",), family="np_manip", hidden=True,
               key_var_num_args=key_var_num_args, doc=doc)
    op.np_diff = diff or _all_diff
    op.np_index_params = index_params or (lambda p: p)
    return register(op)


def _variadic(p):
    return tuple(f"arg{i}" for i in range(p.num_args))


def _norm(axis, ndim, name):
    if not -ndim <= axis < max(ndim, 1):
        raise GpundaError(f"Operator {name}: axis {axis} is out of bounds for array of "
                          f"dimension {ndim}")
    return axis % ndim if ndim else 0


def _promote_all(xs):
    dt = xs[0].dtype
    for x in xs[1:]:
        dt = np_result_type(dt, x.dtype, bool_bool=np.dtype("bool"))
    return [x if x.dtype == dt else x.astype(dt) for x in xs]


# ---------------------------------------------------------------------------
# shape

def _reshape(xp, p, a):
    shape = tuple(p.newshape)
    try:
        return a.reshape(shape, order=p.order)
    except ValueError:
        raise GpundaError(f"Operator _np_reshape: cannot reshape array of size {a.size} "
                          f"(shape {a.shape}) into shape {shape}") from None


register(OpDef("_np_reshape", _owned(_reshape), inputs=("a",),
               params=[Param("newshape", "shape"), Param("order", "enum", "C", choices=("C", "F", "A"))],
               gradient=lambda F, p, i, o, g: [F._np_reshape(g[0], newshape=i[0].shape)],
               save=("inputs",), family="np_manip", hidden=True,
               doc="NumPy's reshape (one -1 inferred)."))
def _transpose(xp, p, a):
    axes = p.axes
    if axes:
        # MXNet 1.9.1: an axis out of range is an MXNetError, a repeated one a ValueError
        if len(axes) != a.ndim:
            raise GpundaError(f"Operator _np_transpose: axes {axes} do not match an array of "
                              f"dimension {a.ndim}")
        norm = [_norm(ax, a.ndim, "_np_transpose") for ax in axes]
        if len(set(norm)) != len(norm):
            raise GpundaValueError(f"Operator _np_transpose: repeated axis in transpose, "
                                   f"axes={axes}")
        axes = tuple(norm)
    return xp.transpose(a, axes or None)


moving("_np_transpose", _transpose,
       [Param("axes", "shape", None)], doc="Permute axes (reversed when axes is None).")
moving("_npi_swapaxes", lambda xp, p, a: xp.swapaxes(a, p.axis1, p.axis2),
       [Param("axis1", "int", 0), Param("axis2", "int", 0)], doc="Interchange two axes.")
moving("_np_moveaxis", lambda xp, p, a: xp.moveaxis(a, p.source, p.destination),
       [Param("source", "shape"), Param("destination", "shape")], doc="Move axes.")
moving("_npi_rollaxis", lambda xp, p, a: xp.rollaxis(a, p.axis, p.start),
       [Param("axis", "int"), Param("start", "int", 0)], doc="Roll an axis backwards.")
moving("_npi_expand_dims", lambda xp, p, a: xp.expand_dims(a, p.axis),
       [Param("axis", "axis")], doc="Insert a length-1 axis.")


def _squeeze(xp, p, a):
    if p.axis is not None:
        axes = (p.axis,) if isinstance(p.axis, int) else p.axis
        if a.ndim == 0 and all(ax in (0, -1) for ax in axes):
            return a.copy()
        for ax in axes:
            if a.shape[_norm(ax, a.ndim, "_np_squeeze")] != 1:
                raise GpundaError(f"Operator _np_squeeze: cannot select an axis to squeeze "
                                  f"out which has size not equal to one (axis {ax} of {a.shape})")
    return xp.squeeze(a, axis=p.axis)


moving("_np_squeeze", _squeeze, [Param("axis", "axis", None)], doc="Remove length-1 axes.")
def _broadcast_to(xp, p, a):
    shape = list(p.shape)
    lead = len(shape) - a.ndim
    for k, d in enumerate(shape):     # -2 keeps the input's dimension (npx's extension)
        if d == -2:
            if k < lead:
                raise GpundaError(f"Operator _npi_broadcast_to: -2 at position {k} has no "
                                  f"matching input dimension (input shape {a.shape})")
            shape[k] = a.shape[k - lead]
    return xp.broadcast_to(a, tuple(shape)).copy()


moving("_npi_broadcast_to", _broadcast_to, [Param("shape", "shape")],
       doc="Broadcast to ``shape`` (-2: keep the input's dimension).")
for _n in (1, 2, 3):
    # MXNet's _np_atleast_1d/2d/3d: num_args inputs, one output each
    moving(f"_np_atleast_{_n}d",
           lambda xp, p, *xs, _f=f"atleast_{_n}d": [getattr(xp, _f)(x) for x in xs],
           [Param("num_args", "int")], inputs=_variadic,
           num_outputs=lambda p: p.num_args, key_var_num_args="num_args",
           doc=f"atleast_{_n}d of each input.")
moving("_npi_broadcast_arrays", lambda xp, p, *xs: [a.copy() for a in xp.broadcast_arrays(*xs)],
       [Param("num_args", "int")], inputs=_variadic, num_outputs=lambda p: p.num_args,
       key_var_num_args="num_args", doc="Broadcast inputs against each other.")


# ---------------------------------------------------------------------------
# joining and splitting

def _concat(xp, p, *xs):
    xs = _promote_all(xs)
    if p.axis is None:
        return xp.concatenate([x.reshape(-1) for x in xs])
    return xp.concatenate(xs, axis=p.axis)


_NARGS = Param("num_args", "int")
# axis None (flatten) is the default: a Symbol node drops params set to None
moving("_npi_concatenate", _concat, [Param("axis", "int", None), _NARGS],
       inputs=_variadic, key_var_num_args="num_args", doc="Join along an existing axis.")
moving("_npi_stack", lambda xp, p, *xs: xp.stack(_promote_all(xs), axis=p.axis),
       [Param("axis", "int", 0), _NARGS], inputs=_variadic, key_var_num_args="num_args",
       doc="Join along a new axis.")
for _n in ("hstack", "vstack", "dstack", "column_stack"):
    moving(f"_npi_{_n}", (lambda f: lambda xp, p, *xs: getattr(xp, f)(_promote_all(xs)))(_n),
           [_NARGS], inputs=_variadic, key_var_num_args="num_args", doc=f"NumPy's {_n}.")


def _split_count(p):
    ios = p.indices_or_sections
    return ios[0] if p.sections else len(ios) + 1


def _split(xp, p, a):
    if p.hsplit:        # NumPy's hsplit: axis 1, or 0 for 1-D arrays (known only here)
        if a.ndim == 0:
            raise ValueError("hsplit only works on arrays of 1 or more dimensions")
        p = p.replace(axis=1 if a.ndim > 1 else 0, hsplit=False)
    ios = p.indices_or_sections
    arg = ios[0] if p.sections else list(ios)
    if p.sections and not p.array_split and a.shape[_norm(p.axis, a.ndim, "_npi_split")] % arg:
        raise ValueError("array split does not result in an equal division")
    return [x.copy() for x in xp.array_split(a, arg, axis=p.axis)]


moving("_npi_split", _split,
       [Param("indices_or_sections", "shape"), Param("sections", "bool", False),
        Param("axis", "int", 0), Param("array_split", "bool", False),
        Param("hsplit", "bool", False)],
       num_outputs=_split_count, doc="Split into sections or at indices along ``axis``.")


# ---------------------------------------------------------------------------
# tiling, flipping, padding

moving("_npi_tile", lambda xp, p, a: xp.tile(a, p.reps), [Param("reps", "shape")],
       doc="Repeat the whole array ``reps`` times.")


def _repeat(xp, p, a):
    reps = p.repeats if len(p.repeats) > 1 else p.repeats[0]
    return xp.repeat(a, reps, axis=p.axis)


moving("_npi_repeats", _repeat, [Param("repeats", "shape"), Param("axis", "int", None)],
       doc="Repeat each element.")
moving("_npi_flip", lambda xp, p, a: xp.flip(a, axis=p.axis).copy(), [Param("axis", "axis", None)],
       doc="Reverse the order of elements along axes.")
def _roll(xp, p, a):
    # MXNet's NumpyRollShape: a shift tuple needs an axis tuple of its length (a one-element
    # shift broadcasts), and an axis may appear once
    axes = p.axis if isinstance(p.axis, tuple) else None if p.axis is None else (p.axis,)
    if len(p.shift) > 1 and (axes is None or len(axes) != len(p.shift)):
        raise GpundaError(f"Operator _np_roll: shift {p.shift} needs an axis tuple of the same "
                          f"length, got axis={p.axis}")
    if axes is not None and len({ax % max(a.ndim, 1) for ax in axes}) != len(axes):
        raise GpundaError(f"Operator _np_roll: repeated axis in axis={p.axis}")
    return xp.roll(a, p.shift if len(p.shift) > 1 else p.shift[0], axis=p.axis)


moving("_np_roll", _roll,
       [Param("shift", "shape"), Param("axis", "axis", None)], doc="Roll elements.")
def _rot90(xp, p, a):
    # MXNet's NumpyRot90Shape: axes are checked against [0, ndim] (an axis equal to ndim
    # passes), and k % 4 == 0 returns the input unchanged: rot90 of a 1-D array with k=0 is
    # a copy, any other k raises
    if p.k % 4 == 0 and len(p.axes) == 2:
        ax = [x + a.ndim if x < 0 else x for x in p.axes]
        if ax[0] != ax[1] and all(0 <= x <= a.ndim for x in ax):
            return a.copy()
    return xp.rot90(a, p.k, axes=p.axes).copy()


moving("_npi_rot90", _rot90,
       [Param("k", "int", 1), Param("axes", "shape", (0, 1))], doc="Rotate by 90 degrees.")


def _pad(xp, p, a):
    pw = np.asarray(p.pad_width).reshape(-1, 2) if len(p.pad_width) > 1 else p.pad_width[0]
    kw = {}
    if p.mode == "constant":
        kw["constant_values"] = p.constant_values
    elif p.mode in ("reflect", "symmetric"):
        kw["reflect_type"] = p.reflect_type
    r = xp.pad(a, pw.tolist() if hasattr(pw, "tolist") else pw, mode=p.mode, **kw)
    return r.astype(a.dtype, copy=False)


moving("_npi_pad", _pad,
       [Param("pad_width", "shape"), Param("mode", "enum", "constant",
                                           choices=("constant", "edge", "reflect", "symmetric",
                                                    "maximum", "minimum", "wrap")),
        Param("constant_values", "float", 0.0), Param("reflect_type", "str", "even")],
       index_params=lambda p: p.replace(constant_values=0.0), doc="NumPy's pad.")


# ---------------------------------------------------------------------------
# triangles and diagonals

moving("_npi_tril", lambda xp, p, a: xp.tril(a, p.k), [Param("k", "int", 0)],
       doc="Lower triangle (below the k-th diagonal).")
moving("_npi_triu", lambda xp, p, a: xp.triu(a, p.k), [Param("k", "int", 0)],
       doc="Upper triangle.")
moving("_np_diag", lambda xp, p, a: xp.diag(a, p.k).copy(), [Param("k", "int", 0)],
       doc="Extract a diagonal or build a diagonal matrix.")
moving("_np_diagflat", lambda xp, p, a: xp.diagflat(a, p.k), [Param("k", "int", 0)],
       doc="A 2-D array with the flattened input on the k-th diagonal.")
moving("_np_diagonal", lambda xp, p, a: xp.diagonal(a, p.offset, p.axis1, p.axis2).copy(),
       [Param("offset", "int", 0), Param("axis1", "int", 0), Param("axis2", "int", 1)],
       doc="Diagonals along two axes.")


def _trace_grad(F, p, i, o, g):
    # trace is the diagonal summed over its last axis: spread the head gradient along that
    # axis, then send it back through _np_diagonal's index map
    a = i[0]
    dshape = np.broadcast_to(np.zeros((), bool), a.shape).diagonal(p.offset, p.axis1,
                                                                   p.axis2).shape
    gd = F.broadcast_to(F.expand_dims(g[0], axis=-1), shape=dshape)
    return [F._npi_index_grad(gd, a, op="_np_diagonal", p=p, nout=1, nres=1)]


def _trace(xp, p, a):
    # MXNet sums in the input dtype (uint8 wraps; NumPy would widen to uint64)
    dt = a.dtype if a.dtype.kind in "iu" else None
    return xp.asarray(xp.trace(a, p.offset, p.axis1, p.axis2, dtype=dt))


register(OpDef("_np_trace", _trace,
               params=[Param("offset", "int", 0), Param("axis1", "int", 0),
                       Param("axis2", "int", 1)],
               inputs=("data",), gradient=_trace_grad, save=("inputs",), family="np_manip",
               hidden=True, doc="Sums along diagonals (NumPy's trace)."))


# ---------------------------------------------------------------------------
# selection

def _take(xp, p, a, idx):
    if p.mode == "raise" and idx.size and float(idx.min()) < 0:
        # MXNet 1.9.1's np.take in 'raise' mode takes no negative index (NumPy's would wrap)
        raise GpundaError(f"Operator _npi_take: index {float(idx.min()):g} is out of bounds "
                          f"(mode='raise' takes indices in [0, n))")
    idx = idx.astype(_I64) if idx.dtype != _I64 else idx
    src = a.reshape(-1) if p.axis is None else a
    ax = 0 if p.axis is None else _norm(p.axis, a.ndim, "_npi_take")
    n = src.shape[ax]
    # the modes are applied to the indices here: CuPy's take has no ``mode``
    if p.mode == "clip":
        idx = xp.clip(idx, 0, max(n - 1, 0))
    elif p.mode == "wrap":
        idx = idx % n if n else idx
    elif idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
        raise IndexError(f"index out of bounds for axis with size {n}")
    return xp.take(src, idx, axis=ax)


_FIRST = lambda p, n: (0,)  # noqa: E731 (the data input; indices are integers)
moving("_npi_take", _take, [Param("axis", "int", None), Param("mode", "enum", "raise",
                                                               choices=("raise", "wrap", "clip"))],
       inputs=("a", "indices"), diff=_FIRST, doc="Take elements along an axis.")
def _take_along_axis(xp, p, a, idx):
    src = a if p.axis is not None else a.reshape(-1)
    ax = p.axis if p.axis is not None else 0
    idx = idx.astype(_I64)
    if src.ndim and idx.size:
        n = src.shape[_norm(ax, src.ndim, "_npi_take_along_axis")]
        lo, hi = int(idx.min()), int(idx.max())
        if hi >= n or lo < -n:
            # MXNet computes np.take_along_axis with NumPy (a fallback): NumPy's IndexError
            raise GpundaIndexError(f"Operator _npi_take_along_axis: index "
                                   f"{hi if hi >= n else lo} is out of bounds for axis {ax} "
                                   f"with size {n}")
    return xp.take_along_axis(src, idx, axis=ax)


moving("_npi_take_along_axis", _take_along_axis,
       [Param("axis", "int", None)], inputs=("a", "indices"), diff=_FIRST,
       doc="Take values by matching index arrays along an axis.")


def _where(xp, p, c, x, y):
    x, y = _promote_all([x, y])
    return xp.where(c.astype(bool) if c.dtype != np.bool_ else c, x, y)


moving("_npi_where", _where, inputs=("condition", "x", "y"), diff=lambda p, n: (1, 2),
       doc="x where condition, else y (broadcast).")


# np.where with a Python scalar for x (lscalar), for y (rscalar) or for both (scalar2): the
# scalar takes the tensor's dtype (an int32 tensor truncates 2.5 to 2); scalar2 is float32
def _cond(c):
    return c.astype(bool) if c.dtype != np.bool_ else c


def _scalar_of(xp, p, t):
    return xp.asarray(p.scalar).astype(t.dtype)


moving("_npi_where_lscalar", lambda xp, p, c, t: xp.where(_cond(c), _scalar_of(xp, p, t), t),
       [Param("scalar", "float", 0.0)], inputs=("condition", "x"), diff=lambda p, n: (1,),
       index_params=lambda p: p.replace(scalar=0.0),
       doc="where(condition, scalar, x): the scalar where condition holds, else x.")
moving("_npi_where_rscalar", lambda xp, p, c, t: xp.where(_cond(c), t, _scalar_of(xp, p, t)),
       [Param("scalar", "float", 0.0)], inputs=("condition", "y"), diff=lambda p, n: (1,),
       index_params=lambda p: p.replace(scalar=0.0),
       doc="where(condition, y, scalar): y where condition holds, else the scalar.")
register(OpDef("_npi_where_scalar2",
               lambda xp, p, c: xp.where(_cond(c), np.float32(p.x), np.float32(p.y))
               .astype(np.float32),
               params=[Param("x", "float", 0.0), Param("y", "float", 0.0)],
               inputs=("condition",), gradient=lambda F, p, i, o, g: [F.zeros_like(i[0])],
               save=("inputs",), family="np_manip", hidden=True,
               doc="where(condition, x, y) for two scalars: float32, zero gradient."))


def _insert(xp, p, arr, values, obj=None):
    if obj is not None:
        where = obj.astype(_I64)
    elif p.int_ind is not None:
        where = p.int_ind
    else:
        where = slice(p.start, p.stop, p.step)
    return xp.asarray(np.insert(_host(arr), _host(where), _host(values), axis=p.axis)) \
        if xp is not np else np.insert(arr, where, values, axis=p.axis)


def _host(x):
    get = getattr(x, "get", None)
    return get() if get is not None else x


_SL = [Param("start", "int", None), Param("stop", "int", None), Param("step", "int", None),
       Param("int_ind", "int", None), Param("axis", "int", None)]
moving("_npi_insert", _insert, _SL + [Param("has_obj", "bool", False)],
       inputs=lambda p: ("arr", "values", "obj") if p.has_obj else ("arr", "values"),
       diff=lambda p, n: (0, 1), doc="Insert values before the given indices.")


# MXNet's three insert ops: the position is an int (insert_scalar: int_ind), a slice
# (insert_slice: start/stop/step) or an int64 tensor (insert_tensor: input obj); the values
# are the input `values`, or the scalar `val` when it is given (then there is no such input)
def _insert_op(name, with_obj):
    def inputs(p):
        return ("arr",) + (("values",) if p.val is None else ()) + (("obj",) if with_obj else ())

    def compute(xp, p, arr, *rest):
        rest = list(rest)
        values = rest.pop(0) if p.val is None else xp.asarray(p.val).astype(arr.dtype)
        obj = rest.pop(0) if with_obj else None
        if not with_obj and name == "_npi_insert_scalar" and p.int_ind is None:
            raise GpundaError(f"Operator {name}: int_ind (the position to insert before) "
                              f"is required")
        return _insert(xp, p, arr, values, obj)

    moving(name, compute, [Param("val", "float", None)] + _SL, inputs=inputs,
           diff=lambda p, n: (0,) if p.val is not None else (0, 1),
           index_params=lambda p: p if p.val is None else p.replace(val=0.0),
           doc="NumPy's insert of values (or the scalar val) before the given positions.")


_insert_op("_npi_insert_scalar", False)
_insert_op("_npi_insert_slice", False)
_insert_op("_npi_insert_tensor", True)


def _delete(xp, p, arr, obj=None):
    if obj is not None:
        where = _host(obj).astype(_I64).reshape(-1)
        n = arr.size if p.axis is None else arr.shape[p.axis]
        where = where[(where >= 0) & (where < n)]     # MXNet ignores negative and too large ones
    elif p.int_ind is not None:
        where = p.int_ind
    else:
        where = slice(p.start, p.stop, p.step)
    return xp.asarray(np.delete(_host(arr), where, axis=p.axis))


moving("_npi_delete", _delete, _SL + [Param("has_obj", "bool", False)],
       inputs=lambda p: ("arr", "obj") if p.has_obj else ("arr",), diff=_FIRST,
       doc="Remove sub-arrays along an axis.")
moving("_npi_resize", lambda xp, p, a: xp.resize(a, p.new_shape), [Param("new_shape", "shape")],
       doc="A new array of ``new_shape``, the input repeated to fill it.")


# ---------------------------------------------------------------------------
# memory

def _share_memory(xp, p, a, b):
    hit = a.size > 0 and b.size > 0 and bool(xp.may_share_memory(a, b))
    return xp.asarray(hit)


register(OpDef("_npi_share_memory", _share_memory, inputs=("a", "b"), nondiff=True, save=(),
               family="np_manip", hidden=True,
               doc="Whether the two arrays' memory ranges overlap (a 0-d bool array); "
                   "np.shares_memory and np.may_share_memory read it."))
