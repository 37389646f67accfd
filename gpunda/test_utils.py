"""Testing helpers with the names and signatures of MXNet's ``mxnet.test_utils``.

Comparison (``assert_almost_equal``, ``almost_equal``, ``same``), random data
(``rand_ndarray``, ``rand_shape_2d/3d/nd``, ``random_arrays``), gradient
checks by central finite differences (``numeric_grad``,
``check_numeric_gradient``, on a Python callable of NDArrays, or on a Symbol
when ``gpunda.symbol`` exists), the default context, and an environment
variable scope.
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

from .base import GpundaError
from .context import Context, current_context

__all__ = ["default_context", "set_default_context", "default_dtype", "get_rtol", "get_atol",
           "get_tols", "assert_almost_equal", "almost_equal", "same", "assert_exception",
           "rand_ndarray", "rand_shape_2d", "rand_shape_3d", "rand_shape_nd", "random_arrays",
           "random_sample", "numeric_grad", "check_numeric_gradient", "check_symbolic_forward",
           "check_symbolic_backward", "environment", "set_env_var", "list_gpus", "np_reduce",
           "assert_allclose"]

_default_ctx = [None]


def default_context():
    """The context tests run on: the one set by ``set_default_context``, else the current one."""
    return _default_ctx[0] if _default_ctx[0] is not None else current_context()


def set_default_context(ctx):
    """Make ``ctx`` what ``default_context()`` returns (None: back to the current context)."""
    _default_ctx[0] = None if ctx is None else Context(ctx)


def default_dtype():
    """The dtype of test data when none is given (float32, as in MXNet)."""
    return np.float32


def list_gpus():
    """Ordinals of the usable GPUs (empty without one)."""
    from .context import num_gpus
    return list(range(num_gpus()))


# ---------------------------------------------------------------------------
# tolerances and comparison

_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}


def _dtype_of(x):
    d = getattr(x, "dtype", None)
    if d is None:
        return np.dtype(np.float64)
    return np.dtype(d)


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """``rtol`` if given, else the default relative tolerance for ``dtype``."""
    return _RTOL.get(np.dtype(dtype), 1e-5) if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """``atol`` if given, else the default absolute tolerance for ``dtype``."""
    return _ATOL.get(np.dtype(dtype), 1e-20) if atol is None else atol


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing ``x`` and ``y``: the looser default of the two dtypes."""
    dts = [d for d in (_dtype_of(x), _dtype_of(y)) if d.kind in "fc"]
    if not dts:
        dts = [np.dtype(np.float64)]
    r = max(get_rtol(None, d) for d in dts) if rtol is None else rtol
    a = max(get_atol(None, d) for d in dts) if atol is None else atol
    return r, a


def _as_np(x):
    from .ndarray.ndarray import NDArray
    if isinstance(x, NDArray):
        if x.stype != "default":
            x = x.tostype("default")
        return x.asnumpy()
    if hasattr(x, "__cuda_array_interface__"):
        from .ndarray.ndarray import _cuda_to_host
        return _cuda_to_host(x)
    return np.asarray(x)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere (NDArrays or NumPy arrays)."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _as_np(a), _as_np(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    try:
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
    except ValueError:      # shapes that do not broadcast
        return False


def _locate(a, b, rtol, atol):
    """(index, a value, b value, violation ratio) of the worst mismatch."""
    a64 = a.astype(np.float64) if a.dtype.kind in "biuf" else a
    b64 = b.astype(np.float64) if b.dtype.kind in "biuf" else b
    a64, b64 = np.broadcast_arrays(a64, b64)
    err = np.abs(a64 - b64) / (atol + rtol * np.abs(b64))
    err = np.where(np.isnan(err), np.inf, err)
    idx = np.unravel_index(int(np.argmax(err)), err.shape) if err.size else ()
    if not err.size:
        return idx, None, None, 0.0
    return idx, a64[idx].item(), b64[idx].item(), float(err[idx])


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise ``AssertionError`` unless ``a`` and ``b`` agree within ``rtol``/``atol``.

    The message names the arrays, the tolerances, the fraction mismatched and
    the location and values of the largest relative violation.
    """
    rtol, atol = get_tols(a, b, rtol, atol)
    an, bn = _as_np(a), _as_np(b)
    if an.shape != bn.shape and not use_broadcast:
        raise AssertionError(f"{names[0]} has shape {an.shape} but {names[1]} has shape "
                             f"{bn.shape}")
    try:
        np.broadcast_shapes(an.shape, bn.shape)
    except ValueError:
        raise AssertionError(f"{names[0]} has shape {an.shape} and {names[1]} has shape "
                             f"{bn.shape}; they do not broadcast") from None
    if np.allclose(an, bn, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    idx, va, vb, ratio = _locate(an, bn, rtol, atol)
    close = np.isclose(an, bn, rtol=rtol, atol=atol, equal_nan=equal_nan)
    frac = 100.0 * (1.0 - float(np.mean(close))) if close.size else 0.0
    raise AssertionError(
        f"Items are not equal:\nError {ratio:f} exceeds tolerance rtol={rtol:e}, "
        f"atol={atol:e} (mismatch {frac:f}%).\nLocation of maximum error: "
        f"{tuple(int(i) for i in idx)}, "
        f"{names[0]}={va!r}, {names[1]}={vb!r}\n {names[0]}: {np.array2string(an, threshold=20)}"
        f"\n {names[1]}: {np.array2string(bn, threshold=20)}")


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``numpy.testing.assert_allclose`` on NDArrays or NumPy arrays."""
    np.testing.assert_allclose(_as_np(a), _as_np(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def same(a, b):
    """Whether ``a`` and ``b`` have exactly equal shapes and values."""
    return bool(np.array_equal(_as_np(a), _as_np(b)))


def assert_exception(f, exception_type, *args, **kwargs):
    """Check that ``f(*args, **kwargs)`` raises ``exception_type``; returns the exception."""
    try:
        f(*args, **kwargs)
    except exception_type as e:
        return e
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise "
                         f"{getattr(exception_type, '__name__', exception_type)}")


# ---------------------------------------------------------------------------
# random data

def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape with sides up to ``dim0``, ``dim1``."""
    low = 0 if allow_zero_size else 1
    return (int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1)))


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape with sides up to ``dim0``, ``dim1``, ``dim2``."""
    low = 0 if allow_zero_size else 1
    return tuple(int(np.random.randint(low, d + 1)) for d in (dim0, dim1, dim2))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape with ``num_dim`` sides, each up to ``dim``."""
    low = 0 if allow_zero_size else 1
    return tuple(int(v) for v in np.random.randint(low, dim + 1, size=num_dim))


def random_arrays(*shapes):
    """Standard-normal NumPy arrays of the default dtype, one per shape (a scalar for ())."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0 else
              np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_sample(population, k):
    """``k`` distinct items drawn from ``population``."""
    population = list(population)
    if not 0 <= k <= len(population):
        raise GpundaError(f"random_sample: k={k} must be between 0 and {len(population)}")
    idx = np.random.permutation(len(population))[:k]
    return [population[i] for i in idx]


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random NDArray: uniform values; for ``csr``/``row_sparse`` a fraction ``density``
    of entries (of rows for row_sparse) is non-zero."""
    from .ndarray.ndarray import array
    ctx = default_context() if ctx is None else Context(ctx)
    dtype = default_dtype() if dtype is None else dtype
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    if stype not in ("default", "csr", "row_sparse"):
        raise GpundaError(f"rand_ndarray: stype={stype!r} is not one of 'default', 'csr', "
                          f"'row_sparse'")
    if distribution not in (None, "uniform", "powerlaw"):
        raise GpundaError(f"rand_ndarray: distribution={distribution!r} is not supported; "
                          f"use 'uniform'")
    if stype == "default":
        vals = np.random.uniform(-1.0, 1.0, size=shape)
        if modifier_func is not None:
            vals = np.vectorize(modifier_func)(vals)
        return array(vals.astype(dtype), ctx=ctx, dtype=dtype)
    if stype == "csr" and len(shape) != 2:
        raise GpundaError(f"rand_ndarray: a csr array must be 2-d, got shape {shape}")
    density = np.random.rand() if density is None else density
    if not 0.0 <= density <= 1.0:
        raise GpundaError(f"rand_ndarray: density={density} must be in [0, 1]")
    vals = np.random.uniform(-1.0, 1.0, size=shape)
    if stype == "row_sparse":
        keep = np.random.rand(shape[0]) < density
        vals[~keep] = 0
    else:
        vals[np.random.rand(*shape) >= density] = 0
    if modifier_func is not None:
        nz = vals != 0
        vals[nz] = np.vectorize(modifier_func)(vals[nz])
    return array(vals.astype(dtype), ctx=ctx, dtype=dtype).tostype(stype)


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce NumPy ``dat`` over ``axis`` (None, int or tuple) with a binary reduce function."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else list(range(len(dat.shape)))
    ret = dat
    for i in reversed(sorted(axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        keepdims_shape = list(dat.shape)
        for i in axis:
            keepdims_shape[i] = 1
        ret = ret.reshape(tuple(keepdims_shape))
    return ret


# ---------------------------------------------------------------------------
# finite-difference gradients

def _is_symbol(obj):
    try:
        from .symbol import Symbol
    except ImportError:
        return False
    return isinstance(obj, Symbol)


def _sum_outputs(outs, head):
    """sum_k sum(out_k * head_k) in float64 (the scalar whose gradient we check)."""
    total = 0.0
    for o, h in zip(outs, head):
        total += float(np.sum(o.astype(np.float64) * h))
    return total


def _as_out_list(r):
    from .ndarray.ndarray import NDArray
    if isinstance(r, NDArray):
        return [r]
    return list(r)


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype(), head_grads=None):
    """Central finite-difference gradients of ``sum_k sum(out_k * head_k)``.

    ``executor`` is a callable taking NDArrays (one per entry of ``location``, a
    list or dict of NumPy arrays) and returning an NDArray or a list of them;
    ``head_grads`` default to ones. Returns NumPy gradients in the same
    structure as ``location`` (list or dict). Values are perturbed in float64
    and cast to ``dtype`` for each evaluation.
    """
    from .ndarray.ndarray import array
    from . import autograd
    names, values = _locations(location, "numeric_grad")
    values = [np.array(v, dtype=np.float64) for v in values]
    ctx = default_context()

    def evaluate(vals):
        nds = [array(v.astype(dtype), ctx=ctx, dtype=dtype) for v in vals]
        with autograd.pause(train_mode=use_forward_train):
            outs = [o.asnumpy() for o in _as_out_list(executor(*nds))]
        return outs

    base = evaluate(values)
    heads = [np.ones(o.shape) for o in base] if head_grads is None else \
        [np.asarray(_as_np(h), dtype=np.float64) for h in head_grads]
    grads = []
    for k, v in enumerate(values):
        g = np.zeros(v.shape, dtype=np.float64)
        flat, gflat = v.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            # the step actually taken, after rounding to ``dtype``
            hi = float(np.asarray(old + eps / 2).astype(dtype))
            lo = float(np.asarray(old - eps / 2).astype(dtype))
            flat[i] = hi
            fp = _sum_outputs(evaluate(values), heads)
            flat[i] = lo
            fm = _sum_outputs(evaluate(values), heads)
            flat[i] = old
            gflat[i] = (fp - fm) / (hi - lo)
        grads.append(g)
    if names is not None:
        return dict(zip(names, grads))
    return grads


def _locations(location, where):
    if isinstance(location, dict):
        names = list(location)
        vals = [_as_np(location[n]) for n in names]
        return names, vals
    if isinstance(location, (list, tuple)):
        return None, [_as_np(v) for v in location]
    raise GpundaError(f"{where}: location must be a list or dict of arrays, got "
                      f"{type(location).__name__}")


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=default_dtype()):
    """Compare autograd gradients of ``sym`` with central finite differences.

    ``sym`` is a callable taking NDArrays (one per entry of ``location``,
    positionally in list/dict order) and returning NDArray(s), or a Symbol
    when ``gpunda.symbol`` provides one. The checked scalar is
    ``sum_k sum(out_k * r_k)`` for fixed random ``r_k``. ``grad_nodes``
    limits the check to some inputs (names for a dict ``location``, indices
    for a list). Raises ``AssertionError`` naming the input that disagrees.
    """
    from .ndarray.ndarray import array
    from . import autograd
    if ctx is not None:
        prev_ctx = _default_ctx[0]
        set_default_context(ctx)
    try:
        if _is_symbol(sym):
            fn, location = _symbol_as_callable(sym, location, aux_states)
        elif callable(sym):
            fn = sym
        else:
            raise GpundaError(f"check_numeric_gradient: sym must be a callable taking NDArrays "
                              f"or a Symbol, got {type(sym).__name__}")
        names, values = _locations(location, "check_numeric_gradient")
        keys = names if names is not None else list(range(len(values)))
        if grad_nodes is None:
            check = keys
        else:
            check = list(grad_nodes)
            for k in check:
                if k not in keys:
                    raise GpundaError(f"check_numeric_gradient: grad_nodes entry {k!r} is not "
                                      f"in location ({keys})")
        if numeric_eps is None:
            numeric_eps = 1e-3 if np.dtype(dtype) != np.float64 else 1e-6
        c = default_context()
        nds = [array(v.astype(dtype), ctx=c, dtype=dtype) for v in values]
        for k, x in zip(keys, nds):
            if k in check:
                x.attach_grad()
        with autograd.record(train_mode=use_forward_train):
            outs = _as_out_list(fn(*nds))
        rng = np.random.RandomState(0)
        heads = [rng.normal(size=o.shape) for o in outs]
        # the backward runs in the forward's mode (BatchNorm's rule differs between them)
        autograd.backward(outs, [array(h, ctx=c, dtype=o.dtype) for h, o in zip(heads, outs)],
                          train_mode=use_forward_train)
        numeric = numeric_grad(fn, values, eps=numeric_eps, use_forward_train=use_forward_train,
                               dtype=dtype, head_grads=heads)
        # finite differences are only as exact as the dtype allows
        is64 = np.dtype(dtype) == np.float64
        rtol = (1e-4 if is64 else 1e-2) if rtol is None else rtol
        atol = (1e-8 if is64 else 1e-3) if atol is None else atol
        for k, x, ng in zip(keys, nds, numeric):
            if k not in check:
                continue
            assert_almost_equal(x.grad.asnumpy(), ng, rtol=rtol, atol=atol,
                                names=(f"autograd gradient of {k!r}",
                                       f"numeric gradient of {k!r}"))
    finally:
        if ctx is not None:
            set_default_context(prev_ctx)


def _symbol_as_callable(sym, location, aux_states):
    """A Symbol as a callable of NDArrays, through its CachedOp (when it exists)."""
    try:
        from .cached_op import CachedOp
    except ImportError:
        raise GpundaError("check_numeric_gradient: gradients of a Symbol need "
                          "gpunda.cached_op, which is not available; pass a callable of "
                          "NDArrays instead") from None
    if aux_states:
        raise GpundaError("check_numeric_gradient: aux_states with a Symbol is not supported; "
                          "pass a callable of NDArrays instead")
    args = sym.list_arguments()
    if isinstance(location, (list, tuple)):
        if len(location) != len(args):
            raise GpundaError(f"check_numeric_gradient: {len(location)} locations for "
                              f"{len(args)} arguments {args}")
        location = dict(zip(args, location))
    missing = [a for a in args if a not in location]
    if missing:
        raise GpundaError(f"check_numeric_gradient: location has no value for {missing}")
    op = CachedOp(sym)

    def fn(*xs):
        return op(*xs)
    return fn, {a: location[a] for a in args}


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=default_dtype()):
    """Run Symbol ``sym`` on ``location`` and compare its outputs with ``expected``.

    Needs ``gpunda.symbol`` and ``gpunda.cached_op``; raises ``GpundaError``
    while they are missing.
    """
    from .ndarray.ndarray import array
    if not _is_symbol(sym):
        raise GpundaError("check_symbolic_forward: sym must be a gpunda Symbol (gpunda.symbol "
                          "is required)")
    fn, loc = _symbol_as_callable(sym, location, aux_states)
    c = default_context() if ctx is None else Context(ctx)
    outs = _as_out_list(fn(*[array(v, ctx=c, dtype=dtype) for v in loc.values()]))
    exp = list(expected.values()) if isinstance(expected, dict) else list(expected)
    if len(exp) != len(outs):
        raise AssertionError(f"check_symbolic_forward: {len(outs)} outputs but {len(exp)} "
                             f"expected arrays")
    for i, (o, e) in enumerate(zip(outs, exp)):
        assert_almost_equal(o, e, rtol=rtol, atol=atol, names=(f"output[{i}]", "expected"),
                            equal_nan=equal_nan)
    return [o.asnumpy() for o in outs]


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=default_dtype()):
    """Run Symbol ``sym`` forward and backward and compare input gradients with ``expected``.

    Needs ``gpunda.symbol`` and ``gpunda.cached_op``; raises ``GpundaError``
    while they are missing.
    """
    from .ndarray.ndarray import array
    from . import autograd
    if not _is_symbol(sym):
        raise GpundaError("check_symbolic_backward: sym must be a gpunda Symbol (gpunda.symbol "
                          "is required)")
    fn, loc = _symbol_as_callable(sym, location, aux_states)
    c = default_context() if ctx is None else Context(ctx)
    names = list(loc)
    nds = [array(v, ctx=c, dtype=dtype) for v in loc.values()]
    exp = expected if isinstance(expected, dict) else dict(zip(names, expected))
    reqs = grad_req if isinstance(grad_req, dict) else {n: grad_req for n in names}
    for n, x in zip(names, nds):
        if reqs.get(n, "write") != "null":
            x.attach_grad(reqs.get(n, "write"))
    with autograd.record():
        outs = _as_out_list(fn(*nds))
    og = [array(g, ctx=c, dtype=o.dtype) for g, o in zip(out_grads, outs)] \
        if out_grads is not None else None
    autograd.backward(outs, og)
    for n, x in zip(names, nds):
        if n in exp and exp[n] is not None and reqs.get(n, "write") != "null":
            assert_almost_equal(x.grad, exp[n], rtol=rtol, atol=atol,
                                names=(f"gradient of {n}", "expected"), equal_nan=equal_nan)
    return {n: x.grad.asnumpy() for n, x in zip(names, nds) if x.grad is not None}


# ---------------------------------------------------------------------------
# environment

@contextlib.contextmanager
def environment(*args):
    """Set environment variables inside a ``with`` block and restore them after.

    ``environment('NAME', 'value')`` or ``environment({'A': '1', 'B': None})``;
    None unsets a variable. Restored even when the block raises.
    """
    if len(args) == 2 and isinstance(args[0], str):
        spec = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        spec = dict(args[0])
    else:
        raise GpundaError("environment: expects (name, value) or a dict {name: value}")
    saved = {k: os.environ.get(k) for k in spec}
    try:
        for k, v in spec.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def set_env_var(key, val, default_val=""):
    """Set environment variable ``key`` to ``val``; returns the previous value."""
    prev = os.environ.get(key, default_val)
    os.environ[key] = str(val)
    return prev
