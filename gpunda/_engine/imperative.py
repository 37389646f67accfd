"""``invoke``: the dispatcher every op call goes through (MXImperativeInvoke).

It reads top to bottom: find the context (inputs must agree), choose the path
(dense, or the storage-type path when a sparse array is involved), compute on
the backend's array module, wrap the outputs, honour ``out=``, record on the
autograd tape. It runs for every op of every step, so the dense path avoids
allocating helper objects and re-validating what cannot have changed: params
are parsed once per distinct call site (``OpDef.parse_params``).
"""
from __future__ import annotations

import threading

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda.base import GpundaError, GpundaTypeError
from gpunda.context import current_context, Context, shares_memory_space
from gpunda.ops.registry import OpDef, get_op
from gpunda._core.deferred import DeferredOpError, failed_input as _failed_input
from gpunda._core.deferred import poison_outputs as _poison_outputs
from gpunda._core import hooks
from gpunda._core import bf16 as _bf16

__all__ = ["invoke", "invoke_parsed"]

_is_rec = _ag._is_rec
_NDArray = None     # set by gpunda.ndarray once the class exists
_new = None         # fast NDArray constructor: _new(data, ctx)
_sparse_invoke = None   # set by gpunda.ndarray.sparse
# set by gpunda.numpy (NOTE [Output flavour follows the first input]): the class and its
# constructor _np_new(data, ctx)
_np_cls = _np_new = None


def invoke(op, inputs, out=None, **params):
    """Run operator ``op`` (an OpDef or name) on NDArray ``inputs``.

    Params may be Python values or MXNet strings. Returns the visible outputs
    (one NDArray, or a list), or ``out`` when given.
    """
    if not isinstance(op, OpDef):
        op = get_op(op)
    return invoke_parsed(op, tuple(inputs), op.parse_params(params), out)


def _op_error(op, inputs, p, e):
    shapes = ", ".join(f"{n}{tuple(x.shape)}:{_bf16.np_dtype(x.dtype).name}"
                       for n, x in zip(_input_names(op, p, len(inputs)), inputs))
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return GpundaError(f"Operator {op.name}: {msg} (inputs: {shapes or 'none'}; params: "
                       f"{p._given if p is not None else {}})")


def _rerun(op, p, xp, ctx, arrays):
    """Run ``op`` on stand-in values (a failed input's), never writing the caller's arrays."""
    if op.mutates:
        muts = op.mutated(p)
        arrays = [a.copy() if i in muts else a for i, a in enumerate(arrays)]
    if xp is np:
        return op.compute(xp, p, *arrays, ctx=ctx) if op.wants_ctx else op.compute(xp, p, *arrays)
    with ctx._backend.device_scope():
        return op.compute(xp, p, *arrays, ctx=ctx) if op.wants_ctx else op.compute(xp, p, *arrays)


def _input_names(op, p, n):
    try:
        names = list(op.input_names(p, n) if op.variadic else op.inputs)
    except Exception:
        names = []
    while len(names) < n:
        names.append(f"arg{len(names)}")
    return names


def _check_inputs(op, p, inputs):
    """Slow path: explain what is wrong with the inputs."""
    names = _input_names(op, p, len(inputs))
    ctx0 = None
    for name, x in zip(names, inputs):
        if not isinstance(x, _NDArray):
            raise GpundaError(f"Operator {op.name}: input {name} must be an NDArray, "
                              f"got {type(x).__name__}")
        if (type(x) is _np_cls) is not (type(inputs[0]) is _np_cls) and not _mixing.allowed:
            _refuse_mixed_flavours(op, names, inputs, name, x)
        if ctx0 is None:
            ctx0, name0 = x._ctx, name
        elif not shares_memory_space(x._ctx, ctx0):   # cpu(0) and cpu(1) are one memory
            raise GpundaError(f"Operator {op.name}: input {name} is on {x._ctx} but input "
                              f"{name0} is on {ctx0}; copy one with as_in_context()")


class _Mixing(threading.local):
    """Whether this thread may mix mx.np and legacy arrays in one op: only autograd's
    create_graph walk does, whose seeds and re-wrapped outputs are legacy NDArrays."""
    allowed = False


_mixing = _Mixing()


def _refuse_mixed_flavours(op, names, inputs, name, x):
    """An mx.np.ndarray and a legacy NDArray in one call: MXNet's TypeError, naming the
    conversion (a dense legacy NDArray may be the np array's own ``as_nd_ndarray`` view, so
    both flavours are accepted only one at a time)."""
    np_name, nd_name = (name, names[0]) if type(x) is _np_cls else (names[0], name)
    raise GpundaTypeError(
        f"Operator {op.name}: input {np_name} is an mx.np.ndarray but input {nd_name} is a "
        f"legacy mx.nd.NDArray; convert one of them first (legacy.as_np_ndarray() or "
        f"np_array.as_nd_ndarray()): MXNet does not mix the two in one operator")


def invoke_parsed(op, inputs, p, out=None, ctx=None):
    """``invoke`` with params already parsed; the hot path."""
    if op.sparse_out and inputs:
        return _sparse_invoke(op, inputs, p, out)
    new = _new
    if inputs:
        x0 = inputs[0]
        if type(x0) is not _NDArray:
            # an mx.np.ndarray is a dense NDArray: the same path, ndarray outputs (NOTE
            # [Output flavour follows the first input]); the loop below finds sparse inputs
            if type(x0) is _np_cls:
                new = _np_new
            elif isinstance(x0, _NDArray) and x0.stype != "default" or any(
                    isinstance(x, _NDArray) and x.stype != "default" for x in inputs):
                return _sparse_invoke(op, inputs, p, out)
            else:
                _check_inputs(op, p, inputs)
        ctx = x0._ctx
        if len(inputs) == 1:
            arrays = (x0._data,)
        else:
            arrays = []
            t0 = type(x0)
            for x in inputs:
                if type(x) is not t0 or x._ctx is not ctx:
                    if isinstance(x, _NDArray) and x.stype != "default":
                        return _sparse_invoke(op, inputs, p, out)
                    _check_inputs(op, p, inputs)
                arrays.append(x._data)
        ctx = ctx._plain        # outputs of cpu_pinned/cpu_shared inputs are on cpu(i)
    else:
        if ctx is None:
            ctx = getattr(p, "ctx", None)
            ctx = current_context() if ctx is None else Context(ctx)
        arrays = ()
    xp = ctx._xp
    if xp is None:
        xp = ctx.backend.xp
    try:
        if xp is np:
            res = op.compute(xp, p, *arrays, ctx=ctx) if op.wants_ctx else op.compute(xp, p, *arrays)
        else:
            with ctx._backend.device_scope():
                res = op.compute(xp, p, *arrays, ctx=ctx) if op.wants_ctx else op.compute(xp, p, *arrays)
    except DeferredOpError as e:     # NOTE [Deferred op errors] in _core/deferred.py
        res = _poison_outputs(e, arrays, lambda a: _rerun(op, p, xp, ctx, a))
    except GpundaError:
        raise
    except Exception as e:
        failed = _failed_input(arrays)
        if failed is not None:
            # a library refused a Poisoned input (CuPy does not call its hooks): same as reading it
            res = _poison_outputs(failed, arrays, lambda a: _rerun(op, p, xp, ctx, a))
        elif not _is_oom(e, ctx):
            raise _op_error(op, inputs, p, e) from e
        else:
            res = _retry_after_oom(op, inputs, p, ctx, xp, arrays, e)
    nout = op.fixed_nout
    if op.out_ctx is not None:     # a cross-device copy (_copyto): outputs live elsewhere
        ctx = op.out_ctx(p)
    if nout == 1 or (nout is None and not isinstance(res, (tuple, list))):
        outs = [new(res, ctx)]
    else:
        outs = [new(r, ctx) for r in res]
    if op.fwd_mutates:     # written by the compute (NOTE [Mutated inputs and their pass])
        for i in op.mutated(p):
            x = inputs[i]
            _ag.bump_version(x)
    if _is_rec() and not op.nondiff:
        _ag._record(op, p, inputs, outs)
    if out is not None:
        return _write_out(op, p, outs, out, inputs)
    nvis = op.fixed_nvis
    if nvis == 1:
        return outs[0]
    if nvis is None:
        nvis = op.n_visible(p)
        if nvis == 1:
            return outs[0]
    return outs[:nvis]


_alloc = object.__new__
_record1 = _ag._record1
_record2 = _ag._record2

# NOTE [Swapping computes]: the fast closures below hold their op's compute in a cell
# (no attribute lookup per call). Tools that replace ``OpDef.compute`` (the profiler)
# call ``refresh_fast_paths()`` afterwards, which re-reads it into every cell.
#
# They hold their array class (``cls``: NDArray, or mx.np's ndarray) in a cell too.
# NDArray's operators are made in its class body, before the class exists: they start
# with None there and ``bind_array_class(NDArray)`` fills the cell once it does.
_fast_fns = []
_unbound = []


def refresh_fast_paths():
    """Make every fast closure call its op's current ``compute``."""
    for f, op in _fast_fns:
        f.__closure__[f.__code__.co_freevars.index("compute")].cell_contents = op.compute


def bind_array_class(cls):
    """Give the fast closures made before class ``cls`` existed their class."""
    for f in _unbound:
        f.__closure__[f.__code__.co_freevars.index("cls")].cell_contents = cls
    _unbound.clear()


def _register_fast(f, op, cls):
    _fast_fns.append((f, op))
    if cls is None:
        _unbound.append(f)


def unary_fn(op, general, cls=None):
    """``nd.<op>`` (or an ``mx.np`` function, ``cls`` its ndarray): runs ``op`` with
    default params on one dense NumPy array of class ``cls`` (default NDArray) inline,
    and hands every other call (params, ``out=``, GPU, sparse) to ``general``."""
    compute, dp, diff = op.compute, op.default_params, not op.nondiff
    cls = cls if cls is not None else _NDArray

    def f(*args, **kwargs):
        if len(args) == 1 and not kwargs:
            x = args[0]
            if type(x) is cls:
                ctx = x._ctx
                if ctx._xp is np:
                    try:
                        r = compute(np, dp, x._data)
                    except Exception:
                        pass    # general raises the proper error
                    else:
                        o = _alloc(cls)
                        o._data = r
                        o._ctx = ctx._plain
                        if diff and x._ag is not None and _is_rec():
                            _record1(op, dp, x, o)
                        return o
        return general(*args, **kwargs)
    _register_fast(f, op, cls)
    return f


def binary_fn(op, other=None, cls=None):
    """``f(a, b)``: ``op`` with default params, running two dense NumPy arrays of class
    ``cls`` (default NDArray) inline.

    Used as the operators themselves (``a * b`` calls it directly), so a right operand
    that is not of class ``cls`` (a scalar) goes to ``other(a, b)``, and everything else
    (GPU, sparse, mixed contexts) to ``invoke_parsed``.
    """
    compute, dp, diff = op.compute, op.default_params, not op.nondiff
    cls = cls if cls is not None else _NDArray

    def f(a, b):
        if type(b) is cls:
            ctx = a._ctx
            if b._ctx is ctx and type(a) is cls and ctx._xp is np:
                try:
                    r = compute(np, dp, a._data, b._data)
                except Exception:
                    pass    # invoke_parsed raises the proper error
                else:
                    o = _alloc(cls)
                    o._data = r
                    o._ctx = ctx._plain
                    if diff and _is_rec():
                        _record2(op, dp, a, b, o)
                    return o
        elif other is not None:
            return other(a, b)
        return invoke_parsed(op, (a, b), dp)
    f.__name__ = op.name
    _register_fast(f, op, cls)
    return f


def fast_scalar(op, x, s):
    """``op(x, scalar=s)``, with the parsed params cached per scalar value."""
    cache = op._scalar_cache
    p = cache.get(s)
    if p is None or type(s) is bool:
        p = op.parse_params({"scalar": s})
        if len(cache) < 1024:
            cache[s] = p
    ctx = x._ctx
    if type(x) is _NDArray and ctx._xp is np:
        try:
            r = op.compute(np, p, x._data)
        except Exception:
            pass
        else:
            o = _alloc(_NDArray)
            o._data = r
            o._ctx = ctx._plain
            if x._ag is not None and _is_rec() and not op.nondiff:
                _record1(op, p, x, o)
            return o
    return invoke_parsed(op, (x,), p)


def _write_out(op, p, outs, out, inputs=()):
    """Copy results into the caller's arrays (``out=``), which may alias inputs."""
    single = isinstance(out, _NDArray)
    targets = [out] if single else list(out)
    nall, nvis = len(outs), op.n_visible(p)
    if len(targets) not in (nall, nvis):
        raise GpundaError(f"Operator {op.name} expects {nall} (all) or {nvis} (visible only) "
                          f"outputs, but got {len(targets)} instead")
    write_outputs(targets, outs, f"Operator {op.name}", inputs)
    return out


def write_outputs(targets, outs, where, inputs=()):
    """Check every target first (type, shape, context, writability), then copy ``outs``
    into them and move their autograd entries there; nothing is written on an error.

    While recording, a target may not be part of a recorded graph, nor (when the call
    was recorded) one of the call's ``inputs`` (autograd.check_writable / check_not_inplace)."""
    for i, (t, r) in enumerate(zip(targets, outs)):
        if not isinstance(t, _NDArray):
            raise GpundaError(f"{where}: out[{i}] must be an NDArray, got {type(t).__name__}")
        if t.shape != r.shape:
            raise GpundaError(f"{where}: out[{i}] has shape {t.shape} but the "
                              f"output has shape {r.shape}")
        if t._ctx is not r._ctx and not shares_memory_space(t._ctx, r._ctx):
            raise GpundaError(f"{where}: out[{i}] is on {t._ctx} but the output is on {r._ctx}")
        _ag.check_writable(t, where)
    if inputs and outs[0]._ag is not None:
        _ag.check_not_inplace(targets, inputs, where)
    for i, (t, r) in enumerate(zip(targets, outs)):
        t._assign_from(r)
        if r._ag is not None:
            _ag._retarget_output(r._ag[0], i, t)


def _is_oom(e, ctx):
    from gpunda._engine import oom as _oom
    return _oom.is_oom(e, ctx)


def _retry_after_oom(op, inputs, p, ctx, xp, arrays, err):
    """Out of device memory in ``op``: free gpunda's caches, compute once more (gpunda/_engine/oom.py)."""
    from gpunda._engine import oom as _oom

    def run():
        if op.wants_ctx:
            return op.compute(xp, p, *arrays, ctx=ctx)
        return op.compute(xp, p, *arrays)

    def again():
        if xp is np:
            return run()
        with ctx._backend.device_scope():
            return run()
    return _oom.retry(again, ctx, lambda e: _op_error(op, inputs, p, e), err)


hooks.invoke_parsed = invoke_parsed    # control-flow gradients record through it
