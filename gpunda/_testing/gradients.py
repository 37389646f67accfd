"""Checking a Symbol's forward and backward against expected values and finite differences.

``check_numeric_gradient`` / ``numeric_grad`` follow MXNet: the Symbol is bound
to an Executor and its output multiplied by a fixed random projection, so one
scalar's gradient is compared. gpunda also accepts a Python callable of
NDArrays in place of the Symbol (or the Executor), checked through autograd.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from gpunda.base import GpundaError
from gpunda._testing.compare import as_host, assert_almost_equal, default_numeric_eps, get_tolerance
from gpunda._testing.environ import default_context, default_dtype

__all__ = ["simple_forward", "numeric_grad", "check_numeric_gradient",
           "check_symbolic_forward", "check_symbolic_backward"]

_FLOATS = (np.float16, np.float32, np.float64)


def _is_symbol(obj):
    from gpunda.symbol import Symbol
    return isinstance(obj, Symbol)


def _check_dtype(dtype, where, allow_asnumpy=False):
    if allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy":
        return
    if not any(dtype is t or np.dtype(dtype) == t for t in _FLOATS):
        raise GpundaError(f"{where}: dtype={dtype!r} must be float16, float32 or float64"
                          + (" or 'asnumpy'" if allow_asnumpy else ""))


def _to_nd(v, ctx, dtype):
    """A NumPy value as an NDArray on ``ctx`` (its own dtype for 'asnumpy'); NDArrays pass."""
    from gpunda.ndarray.ndarray import array
    if isinstance(v, np.ndarray):
        return array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)
    return v


def _sorted_items(d):
    """The ``(key, value)`` pairs of ``d`` sorted by key."""
    return sorted(d.items(), key=lambda kv: kv[0])


def _sorted_dict(d):
    """``d`` as an OrderedDict sorted by key."""
    return OrderedDict(_sorted_items(d))


def _parse_location(sym, location, ctx, dtype=default_dtype()):
    """``location`` (a list in ``list_arguments()`` order, or a dict) as sorted NDArrays."""
    args = sym.list_arguments()
    if isinstance(location, dict):
        if set(location) != set(args):
            raise ValueError(f"Symbol arguments and keys of the given location do not match. "
                             f"symbol args:{set(args)}, location.keys():{set(location)}")
    elif isinstance(location, (list, tuple)):
        location = dict(zip(args, location))
    else:
        raise GpundaError(f"location must be a list, tuple or dict of arrays, got "
                          f"{type(location).__name__}")
    return _sorted_dict({k: _to_nd(v, ctx, dtype) for k, v in location.items()})


def _parse_aux_states(sym, aux_states, ctx, dtype=default_dtype()):
    """``aux_states`` (list in ``list_auxiliary_states()`` order, or dict) as a dict of NDArrays."""
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError(f"Symbol aux_states names and given aux_states do not match. "
                             f"symbol aux_names:{set(names)}, aux_states.keys:{set(aux_states)}")
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: _to_nd(np.asarray(v) if not hasattr(v, "asnumpy") else v, ctx, dtype)
            for k, v in aux_states.items()}


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Run ``sym`` on NumPy ``inputs`` (by argument name); NumPy output(s) back."""
    from gpunda.ndarray.ndarray import array
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: array(v, ctx=ctx) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [o.asnumpy() for o in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def _is_executor(obj):
    return hasattr(obj, "arg_dict") and hasattr(obj, "forward") and hasattr(obj, "outputs")


def _as_stype(value, stype, dtype):
    from gpunda.ndarray.ndarray import array
    arr = array(value, dtype=dtype)
    return arr if stype == "default" else arr.tostype(stype)


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype(), head_grads=None):
    """Central finite differences ``(f(x + eps/2) - f(x - eps/2)) / eps`` per input element.

    Args:
        executor: an Executor whose ``outputs[0]`` summed is f (MXNet), or a
            callable taking one NDArray per entry of ``location`` and returning
            NDArray(s); f is then ``sum_k sum(out_k * head_grads[k])`` (head
            grads default to ones).
        location: dict name -> NumPy array (an Executor's arguments), or for a
            callable a list or dict of NumPy arrays.
        aux_states: dict name -> NumPy array, restored before every forward.
        eps: the step.
        use_forward_train: run the forward in training mode.
        dtype: the dtype the inputs are cast to for each evaluation.

    Returns:
        Gradients as NumPy arrays, in ``location``'s structure.
    """
    if _is_executor(executor):
        return _executor_numeric_grad(executor, location, aux_states, eps, use_forward_train,
                                      dtype)
    if not callable(executor):
        raise GpundaError(f"numeric_grad: executor must be an Executor or a callable of "
                          f"NDArrays, got {type(executor).__name__}")
    return _callable_numeric_grad(executor, location, eps, use_forward_train, dtype, head_grads)


def _executor_numeric_grad(executor, location, aux_states, eps, use_forward_train, dtype):
    _check_dtype(dtype, "numeric_grad")
    location = {k: np.array(as_host(v), order="C") for k, v in location.items()}
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        if executor.arg_dict[k].stype == "default":
            executor.arg_dict[k][:] = _as_stype(v, "default", dtype)

    def f():
        if aux_states is not None:
            for name, val in aux_states.items():
                aux = executor.aux_dict[name]
                aux[:] = _as_stype(val, aux.stype, dtype)
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy()

    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        stype = executor.arg_dict[k].stype
        flat, original = v.reshape(-1), v.copy()
        for i in range(flat.size):
            flat[i] = original.flat[i] + eps / 2.0
            executor.arg_dict[k][:] = _as_stype(v, stype, dtype)
            f_plus = f()
            flat[i] = original.flat[i] - eps / 2.0
            executor.arg_dict[k][:] = _as_stype(v, stype, dtype)
            f_minus = f()
            grads[k].flat[i] = (f_plus - f_minus).sum() / eps
            flat[i] = original.flat[i]
        executor.arg_dict[k][:] = _as_stype(original, stype, dtype)
    return grads


def _locations(location, where):
    if isinstance(location, dict):
        names = list(location)
        return names, [as_host(location[n]) for n in names]
    if isinstance(location, (list, tuple)):
        return None, [as_host(v) for v in location]
    raise GpundaError(f"{where}: location must be a list or dict of arrays, got "
                      f"{type(location).__name__}")


def _as_out_list(r):
    from gpunda.ndarray.ndarray import NDArray
    return [r] if isinstance(r, NDArray) else list(r)


def _callable_numeric_grad(fn, location, eps, use_forward_train, dtype, head_grads):
    from gpunda.ndarray.ndarray import array
    from gpunda import autograd
    names, values = _locations(location, "numeric_grad")
    values = [np.array(v, dtype=np.float64) for v in values]
    ctx = default_context()

    def evaluate():
        nds = [array(v.astype(dtype), ctx=ctx, dtype=dtype) for v in values]
        with autograd.pause(train_mode=use_forward_train):
            return [o.asnumpy() for o in _as_out_list(fn(*nds))]

    base = evaluate()
    heads = [np.ones(o.shape) for o in base] if head_grads is None else \
        [np.asarray(as_host(h), dtype=np.float64) for h in head_grads]

    def total():
        return sum(float(np.sum(o.astype(np.float64) * h)) for o, h in zip(evaluate(), heads))

    grads = []
    for v in values:
        g = np.zeros(v.shape, dtype=np.float64)
        flat = v.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            # the step actually taken, after rounding to ``dtype``
            hi = float(np.asarray(old + eps / 2).astype(dtype))
            lo = float(np.asarray(old - eps / 2).astype(dtype))
            flat[i] = hi
            f_plus = total()
            flat[i] = lo
            f_minus = total()
            flat[i] = old
            g.flat[i] = (f_plus - f_minus) / (hi - lo)
        grads.append(g)
    return dict(zip(names, grads)) if names is not None else grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=default_dtype()):
    """Compare the backward pass of ``sym`` with finite differences.

    Args:
        sym: a Symbol, or (gpunda) a callable taking one NDArray per entry of
            ``location`` and returning NDArray(s), differentiated by autograd.
        location: argument values, a list in ``list_arguments()`` order or a dict.
        aux_states: auxiliary states (list or dict), for a Symbol.
        numeric_eps: the finite-difference step (default: 2**-9 for float32,
            2**-6 float16, 2**-14 float64 for a Symbol; 1e-3, or 1e-6 in float64,
            for a callable).
        rtol, atol: tolerances (default: the dtype's, see ``get_tols``).
        grad_nodes: the arguments to check: names (list), or a dict name ->
            grad_req ('write', 'add', 'null'); for a callable with a list
            location, indices.
        use_forward_train: run the finite-difference forwards in training mode.
        ctx: the context (default ``default_context()``).
        grad_stype_dict: name -> storage type of that gradient.
        dtype: float16, float32 or float64.

    Raises ``AssertionError`` naming the argument whose gradients disagree.
    """
    _check_dtype(dtype, "check_numeric_gradient")
    if _is_symbol(sym):
        _check_symbol_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                               use_forward_train, ctx or default_context(), grad_stype_dict,
                               dtype)
    elif callable(sym):
        _check_callable_gradient(sym, location, numeric_eps, rtol, atol, grad_nodes,
                                 use_forward_train, ctx, dtype)
    else:
        raise GpundaError(f"check_numeric_gradient: sym must be a Symbol or a callable taking "
                          f"NDArrays, got {type(sym).__name__}")


def _check_symbol_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                           use_forward_train, ctx, grad_stype_dict, dtype):
    from gpunda.ndarray.ndarray import array, zeros
    from gpunda.symbol import Variable
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, (list, tuple)):
        grad_nodes = list(grad_nodes)
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        grad_nodes = list(grad_nodes)
    else:
        raise ValueError(f"check_numeric_gradient: grad_nodes must be a list, tuple or dict, "
                         f"got {type(grad_nodes).__name__}")
    unknown = [k for k in grad_nodes if k not in location]
    if unknown:
        raise GpundaError(f"check_numeric_gradient: grad_nodes {unknown} are not arguments of "
                          f"the symbol ({list(location)})")
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    # one scalar: the output weighted by a fixed projection whose entries are not tiny,
    # so the finite differences keep their precision
    out = sym * Variable("__random_proj")
    proj = np.random.rand(*out_shapes[0]) + 0.1
    location = dict(location)
    location["__random_proj"] = array(proj, ctx=ctx, dtype=dtype)
    grads_npy = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    grads_npy["__random_proj"] = np.random.normal(0, 0.01, size=out_shapes[0])
    grads = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_npy.items()}
    for k, stype in (grad_stype_dict or {}).items():
        if k in grads and stype in ("row_sparse", "csr"):
            grads[k] = zeros(grads[k].shape, ctx=ctx, dtype=grads[k].dtype, stype=stype)
    exe = out.bind(ctx, grad_req=grad_req, args=location, args_grad=grads, aux_states=aux)
    exe.forward(is_train=True)
    if len(exe.outputs) != 1:
        raise GpundaError(f"check_numeric_gradient: the symbol must have one output, it has "
                          f"{len(exe.outputs)}")
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    if np.dtype(dtype) != np.float64 and eps < 1e-5:
        raise GpundaError(f"check_numeric_gradient: numeric_eps={eps} is too small for "
                          f"{np.dtype(dtype).name}; use at least 1e-5 or dtype=float64")
    exe.backward()
    numeric = numeric_grad(exe, location_npy, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for name in grad_nodes:
        fd, orig, got = numeric[name], grads_npy[name], exe.grad_dict[name]
        names = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        req = grad_req[name]
        if req == "write":
            assert_almost_equal(fd, got, rtol, atol, names)
        elif req == "add":
            assert_almost_equal(fd, as_host(got) - orig, rtol, atol, names)
        elif req == "null":
            assert_almost_equal(orig, got, rtol, atol, names)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")


def _check_callable_gradient(fn, location, numeric_eps, rtol, atol, grad_nodes,
                             use_forward_train, ctx, dtype):
    from gpunda.ndarray.ndarray import array
    from gpunda import autograd
    from gpunda.context import Context
    c = default_context() if ctx is None else Context(ctx)
    names, values = _locations(location, "check_numeric_gradient")
    keys = names if names is not None else list(range(len(values)))
    check = keys if grad_nodes is None else list(grad_nodes)
    for k in check:
        if k not in keys:
            raise GpundaError(f"check_numeric_gradient: grad_nodes entry {k!r} is not in "
                              f"location ({keys})")
    if numeric_eps is None:
        numeric_eps = 1e-3 if np.dtype(dtype) != np.float64 else 1e-6
    with c:
        nds = [array(v.astype(dtype), ctx=c, dtype=dtype) for v in values]
        for k, x in zip(keys, nds):
            if k in check:
                x.attach_grad()
        with autograd.record(train_mode=use_forward_train):
            outs = _as_out_list(fn(*nds))
        heads = [np.random.RandomState(0).normal(size=o.shape) for o in outs]
        # the backward runs in the forward's mode (BatchNorm's rule differs between them)
        autograd.backward(outs, [array(h, ctx=c, dtype=o.dtype) for h, o in zip(heads, outs)],
                          train_mode=use_forward_train)
        numeric = _callable_numeric_grad(fn, values, numeric_eps, use_forward_train, dtype,
                                         heads)
    # finite differences are only as exact as the dtype allows
    is64 = np.dtype(dtype) == np.float64
    rtol = (1e-4 if is64 else 1e-2) if rtol is None else rtol
    atol = (1e-8 if is64 else 1e-3) if atol is None else atol
    for k, x, fd in zip(keys, nds, numeric):
        if k in check:
            assert_almost_equal(x.grad.asnumpy(), fd, rtol=rtol, atol=atol,
                                names=(f"autograd gradient of {k!r}", f"numeric gradient of {k!r}"))


def _need_symbol(sym, where):
    if not _is_symbol(sym):
        raise GpundaError(f"{where}: sym must be a gpunda Symbol, got {type(sym).__name__}")


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=default_dtype()):
    """Run Symbol ``sym`` at ``location`` (inference mode) and compare outputs with ``expected``.

    ``expected`` is a list in output order or a dict by output name; outputs
    beyond it are not checked. ``dtype='asnumpy'`` keeps each input's dtype.
    Returns the outputs (NDArrays).
    """
    _need_symbol(sym, "check_symbolic_forward")
    _check_dtype(dtype, "check_symbolic_forward", allow_asnumpy=True)
    from gpunda.ndarray.ndarray import zeros
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    grads = {k: zeros(v.shape, ctx=ctx, dtype=v.dtype) for k, v in location.items()}
    exe = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux)
    exe.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, exe.outputs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return exe.outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=default_dtype()):
    """Run Symbol ``sym`` forward (training) and backward; compare gradients with ``expected``.

    ``out_grads``: head gradients (list in output order, dict by output name,
    or None for ones). ``expected``: list in argument order or dict by name;
    only those arguments are checked. ``grad_req`` (str, list or dict):
    'write' compares the gradient, 'add' the gradient minus the buffer's
    previous (random) content, 'null' that the buffer was left alone.
    ``grad_stypes``: name -> storage type of the gradient buffer. Returns the
    gradient buffers (dict of NDArrays).
    """
    _need_symbol(sym, "check_symbolic_backward")
    _check_dtype(dtype, "check_symbolic_backward", allow_asnumpy=True)
    from gpunda.ndarray.ndarray import array
    from gpunda._testing.random_data import create_sparse_array
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    args = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(args, expected))
    # buffers start dirty, deterministically, so 'add' and 'null' are really checked
    grads_npy = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    grads = {}
    for k, v in grads_npy.items():
        stype = (grad_stypes or {}).get(k)
        if stype is not None and stype != "default":
            grads[k] = create_sparse_array(v.shape, stype, density=0.0)
        else:
            want_dtype = np.asarray(expected[k]).dtype if isinstance(dtype, str) else dtype
            grads[k] = array(v, ctx=ctx, dtype=want_dtype)
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in args}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(args, grad_req))
    exe = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux, grad_req=grad_req)
    exe.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    if out_grads is not None:
        out_grads = [_to_nd(g, ctx, dtype) for g in out_grads]
    if any(grad_req.get(k, "null") != "null" for k in grads):
        exe.backward(out_grads)     # with every buffer 'null' there is nothing to run
    for name in expected:
        names = (f"EXPECTED_{name}", f"BACKWARD_{name}")
        req = grad_req.get(name, "null")
        if req == "write":
            assert_almost_equal(expected[name], grads[name], rtol, atol, names,
                                equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(expected[name], as_host(grads[name]) - grads_npy[name], rtol,
                                atol, names, equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(grads_npy[name], grads[name], rtol, atol, names,
                                equal_nan=equal_nan)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")
    return grads
