"""How ops compute on bfloat16 arrays.

NOTE [bfloat16 compute]
-----------------------
NumPy runs ml_dtypes' bfloat16 through generic loops: elementwise ufuncs work but are slow,
reductions accumulate in bfloat16, and matmul, dot, einsum, the CPU kernels and SciPy have no
bfloat16 at all. MXNet's bfloat16 kernels (oneDNN's Convolution, FullyConnected, BatchNorm,
Pooling; mshadow's elementwise ones) convert to float32, compute, and convert the result back,
accumulating in float32. gpunda does the same, once for every op instead of per op:

- an op given a bfloat16 input computes on float32 copies of its bfloat16 inputs (exact: a
  bfloat16 is a float32's upper half), its other inputs as they are;
- each output that comes back float32 where the op's type rule says bfloat16 (``infer_type``
  when the op has one; else the op's ``dtype`` parameter when it has one, else bfloat16, the
  type of its floating inputs: MXNet's default rule) is rounded to bfloat16, to nearest even;
- bfloat16 beside another float type goes to an op without a type rule as it is: the op's
  own check refuses it as MXNet does (no promotion in ``nd``), or NumPy's promotion gives
  float32 (``mx.np``); an op with a type rule (BatchNorm: bfloat16 data, float32
  parameters) takes the float32 path;
- a gradient rule that meets bfloat16 computes on float32 copies too, and each input's
  gradient comes back in that input's bfloat16;
- an input the op writes in place (optimizer updates, BatchNorm's moving statistics) gets its
  float32 copy's new value back, rounded;
- a GEMM the fusion pass splits from its bias add (NOTE [GEMM epilogues] in
  _engine/fusion/partition.py) keeps its float32 result (``float32_result``), and the add,
  whose type rule gives the bias's type, rounds it: once, as the op itself does; Dropout's
  mask (its type rule) stays float32 likewise, so its split multiplies by the op's scale;
- the ops in ``NATIVE`` run on bfloat16 directly: casts (their result is the point), the
  finite checks, and data movement (reshape, transpose, slicing, concatenation: exact either
  way, and faster without the float32 round trip).

The wrapping costs nothing until bfloat16 is first named in the process: gpunda/_core/bf16.py
loads ml_dtypes then, and the engine's callback (``install`` here, then refreshing the fast
paths and CachedOp steps, NOTE [Swapping computes]) wraps every op's ``compute``. From then on
an op without bfloat16 inputs pays one wrapper call and one dtype test per input.
"""
from __future__ import annotations

import numpy as np

from gpunda._core import bf16 as _bf16
from gpunda.ops import registry as _registry
from gpunda.ops.registry import all_ops

__all__ = ["install", "rewrap", "NATIVE", "float32_result"]

# ops that compute on bfloat16 arrays as they are (see the NOTE)
NATIVE = frozenset({
    "Cast", "amp_cast", "amp_multicast", "all_finite", "multi_all_finite",
    "Reshape", "reshape_like", "Flatten", "transpose", "expand_dims", "squeeze", "_copy",
    "slice", "slice_axis", "slice_like", "Concat", "stack", "SliceChannel", "split_v2",
    "_split_v2", "tile", "repeat", "flip", "reverse", "SwapAxis", "zeros_like", "ones_like",
    "_copyto", "BlockGrad", "stop_gradient", "make_loss", "MakeLoss", "shape_array",
    "size_array", "take", "pick", "gather_nd", "_npi_copy", "_np_reshape", "_np_transpose",
    "_npi_concatenate", "_npi_stack", "_np_squeeze", "_npx_reshape", "depth_to_space",
    "space_to_depth", "broadcast_to", "broadcast_like", "broadcast_axis",
})

_F32 = np.dtype(np.float32)
_NO = object()          # an argument not given
_installed = []
_unwrapped = {}         # op -> the compute its wrapper calls (a tool may wrap it again)


def _out_types(op, p, in_t, n):
    """The output dtypes ``op``'s type rule gives inputs of dtypes ``in_t`` (see the NOTE)."""
    if op.infer_type is not None:
        try:
            return list(op.infer_type(p, list(in_t))[1])
        except Exception:       # a rule that cannot say: MXNet's default below
            pass
    dt = getattr(p, "dtype", None)
    return [dt if isinstance(dt, np.dtype) else _bf16.dtype()] * n


def _in_float32(op, compute, bf, xp, p, arrays, kw):
    if not _float32_path(op, arrays, bf):
        # bfloat16 beside another float type: the op's own checks (MXNet refuses mixed
        # inputs) or NumPy's promotion (mx.np) decide, on the arrays as they are
        return compute(xp, p, *arrays, **kw)
    ups = [a.astype(_F32) if getattr(a, "dtype", None) == bf else a for a in arrays]
    res = compute(xp, p, *ups, **kw)
    if op.mutates:
        for i in op.mutated(p):
            if ups[i] is not arrays[i]:
                arrays[i][...] = ups[i]          # the float32 update, rounded
    multi = isinstance(res, (tuple, list))
    outs = list(res) if multi else [res]
    types = _out_types(op, p, [getattr(a, "dtype", None) for a in arrays], len(outs))
    outs = [o.astype(bf) if t is not None and t == bf and getattr(o, "dtype", None) == _F32
            else o for o, t in zip(outs, types)]
    if not multi:
        return outs[0]
    return tuple(outs) if isinstance(res, tuple) else outs


def _float32_path(op, arrays, bf):
    """Whether ``op``'s wrapped compute takes the float32 path for ``arrays`` (see
    ``_in_float32``): a bfloat16 input, and no other float type beside it unless the op
    has a type rule."""
    dts = [getattr(a, "dtype", None) for a in arrays]
    return any(d is bf for d in dts) and (
        op.infer_type is not None or not any(d is not None and d.kind == "f" for d in dts))


def float32_result(op):
    """A compute for ``op`` that gives, where its wrapped compute would compute on float32
    copies of bfloat16 inputs, that float32 result unrounded, and otherwise calls the op's
    current compute (errors included): the GEMM half of a split GEMM op (NOTE [GEMM
    epilogues]), whose bias add then rounds once, as the whole op does."""
    def compute(xp, p, *arrays, **kw):
        raw = _unwrapped.get(op)   # none before bfloat16 is named, none for NATIVE ops
        if raw is not None:
            bf = _bf16.dtype()
            if _float32_path(op, arrays, bf):
                return raw(xp, p, *[a.astype(_F32) if getattr(a, "dtype", None) is bf
                                    else a for a in arrays], **kw)
        return op.compute(xp, p, *arrays, **kw)
    return compute


def _wrap(op, compute):
    bf = _bf16.dtype()
    if compute is None or getattr(compute, "_bf16_of", None) is not None:
        return compute

    def run(xp, p, *arrays, **kw):
        for a in arrays:
            # ``is``: NumPy keeps one instance of a registered dtype (np.dtype() of the
            # type, of its name, an array's, CuPy's all give it); an equality test would
            # double this loop's cost on every op call
            if getattr(a, "dtype", None) is bf:
                return _in_float32(op, compute, bf, xp, p, arrays, kw)
        return compute(xp, p, *arrays, **kw)

    # one and two inputs, the common calls, without the generic loop's packing (half the
    # cost); anything else (fewer or more arrays, keywords) takes ``run``
    def run1(xp, p, x=_NO, *rest, **kw):
        if rest or kw or x is _NO or getattr(x, "dtype", None) is bf:
            return run(xp, p, *(() if x is _NO else (x,)), *rest, **kw)
        return compute(xp, p, x)

    def run2(xp, p, a=_NO, b=_NO, *rest, **kw):
        if rest or kw or b is _NO or getattr(a, "dtype", None) is bf or \
                getattr(b, "dtype", None) is bf:
            return run(xp, p, *(x for x in (a, b) if x is not _NO), *rest, **kw)
        return compute(xp, p, a, b)

    n = None if op.variadic or op.wants_ctx else len(op.inputs)
    return _like(run1 if n == 1 else run2 if n == 2 else run, compute)


def _like(wrapper, f):
    """``wrapper`` carrying ``f``'s attributes (a gradient rule's ``reads_ograds`` ...)."""
    wrapper.__dict__.update(getattr(f, "__dict__", {}))
    wrapper._bf16_of = f
    wrapper.__name__ = getattr(f, "__name__", wrapper.__name__)
    wrapper.__doc__ = getattr(f, "__doc__", None)
    return wrapper


def _wrap_grad(grad):
    """``grad`` (a gradient rule) computing in float32 when it meets bfloat16 (inputs,
    outputs or head gradients, raw arrays or NDArrays), each input's gradient rounded back to
    that input's bfloat16."""
    bf = _bf16.dtype()
    if grad is None or getattr(grad, "_bf16_of", None) is not None:
        return grad

    def isbf(x):
        d = getattr(x, "dtype", None)
        return d is bf or d is bf.type

    def up(xs):     # (a rule may be given None for what its op does not save)
        return xs if xs is None else [x.astype(_F32) if isbf(x) else x for x in xs]

    def run(F, p, i, o, g, *rest, **kw):
        if not any(isbf(x) for xs in (i, o, g) if xs is not None for x in xs):
            return grad(F, p, i, o, g, *rest, **kw)
        res = grad(F, p, up(i), up(o), up(g), *rest, **kw)
        if i is None or res is None:
            return res
        return [r.astype(bf) if r is not None and isbf(x) and not isbf(r) and
                np.dtype(r.dtype) == _F32 else r for r, x in zip(res, i)] + list(res[len(i):])
    return _like(run, grad)


def _wrap_update(op, update):
    """``op.update`` (a writer run in the backward: BatchNorm's moving statistics) on float32
    copies of bfloat16 arrays, the written inputs getting their new values back, rounded."""
    bf = _bf16.dtype()
    if update is None or getattr(update, "_bf16_of", None) is not None:
        return update

    def up(xs):
        return [x.astype(_F32) if getattr(x, "dtype", None) is bf else x for x in xs]

    def run(xp, p, ins, outs):
        if not any(getattr(x, "dtype", None) is bf for xs in (ins, outs) for x in xs):
            return update(xp, p, ins, outs)
        ups = up(ins)
        update(xp, p, ups, up(outs))
        for i in op.mutated(p):
            if ups[i] is not ins[i]:
                ins[i][...] = ups[i]
    return _like(run, update)


def _wrap_op(op):
    op.gradient = _wrap_grad(op.gradient)
    op.update = _wrap_update(op, op.update)
    if op.name in NATIVE:
        return
    if getattr(op.compute, "_bf16_of", None) is None:
        _unwrapped[op] = op.compute
    op.compute = _wrap(op, op.compute)
    raw = getattr(op, "raw_compute", None)
    if raw is not None:
        op.raw_compute = _wrap(op, raw)


def install():
    """Wrap every op's compute (and raw gradient compute) for bfloat16 inputs; once."""
    if _installed:
        return
    _installed.append(True)
    rewrap()


def rewrap():
    """Wrap again what a tool put back unwrapped (the profiler restores the computes it
    found when it started); nothing before ``install``, and wrapped ops stay as they are."""
    if not _installed:
        return
    for op in set(all_ops().values()):
        _wrap_op(op)
    _registry.on_register = _wrap_op        # ops registered later (Custom, libraries)
    from gpunda.ops import raw as _raw
    for f in list(_raw._raw_fs.values()):     # their op functions hold the old computes
        keep = {"_xp": f._xp, "_ctx": f._ctx}
        f.__dict__.clear()
        f.__dict__.update(keep)
