"""Running a model several ways and comparing: speed, contexts/dtypes, hybridization, optimizers."""
from __future__ import annotations

import time
import traceback

import numpy as np

from gpunda.base import GpundaError
from gpunda._testing.compare import as_host, assert_almost_equal, compare_ndarray_tuple, get_tols
from gpunda._testing.environ import default_context

__all__ = ["check_speed", "check_consistency", "check_gluon_hybridize_consistency",
           "compare_optimizer"]


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds per run of Symbol ``sym``: forward + backward (``typ='whole'``) or forward only.

    ``location`` (dict name -> NumPy array) gives the inputs, else they are
    standard normal with the shapes in ``kwargs``. One warm-up run is not timed.
    """
    from gpunda.ndarray.ndarray import waitall
    if typ not in ("whole", "forward"):
        raise ValueError('typ can only be "whole" or "forward".')
    ctx = ctx or default_context()
    grad_req = "write" if grad_req is None else grad_req
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=a.shape, scale=1.0) for k, a in exe.arg_dict.items()}
    else:
        if not isinstance(location, dict):
            raise GpundaError(f"check_speed: location must be a dict, got {location!r}")
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx,
                              **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = np.asarray(value).astype(exe.arg_dict[name].dtype)
    train = typ == "whole"

    def step():
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)
    step()
    waitall()
    tic = time.time()
    for _ in range(N):
        step()
    waitall()
    return (time.time() - tic) / N


def _smaller_dtype(dt1, dt2):
    """The less precise of two dtypes (``dt1`` when ``dt2`` is None)."""
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def _compare(arr, gt_arr, rtol, atol, equal_nan, raise_on_err, what):
    try:
        assert_almost_equal(arr, gt_arr, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError as e:
        print(what)
        traceback.print_exc()
        if raise_on_err:
            raise
        print(str(e))


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Check that a Symbol gives the same outputs and gradients on several contexts/dtypes.

    Args:
        sym: a Symbol, or one per entry of ``ctx_list`` (same arguments and outputs).
        ctx_list: dicts of ``simple_bind`` arguments: ``{'ctx': mx.cpu(0),
            'data': (2, 3), 'type_dict': {'data': np.float32}}``.
        scale: the spread of the random inputs (normal, or uniform within
            +-0.92 scale with ``use_uniform``), drawn in ``rand_type``.
        grad_req: the gradient requirement; 'null' checks the forward only.
        arg_params, aux_params: inputs to use instead of random ones (aux default 0).
        rtol, atol: tolerances (default: by dtype, see ``get_tols``).
        raise_on_err: raise on the first mismatch, else print it and go on.
        ground_truth: dict name -> array to compare with, instead of the
            most precise run.

    Returns:
        The ground truth: dict of output and gradient arrays.
    """
    from gpunda.ndarray.ndarray import array
    from gpunda.symbol import Symbol
    if len(ctx_list) < 2:
        raise GpundaError(f"check_consistency: ctx_list needs at least 2 entries, got "
                          f"{len(ctx_list)}")
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    if len(syms) != len(ctx_list):
        raise GpundaError(f"check_consistency: {len(syms)} symbols for {len(ctx_list)} contexts")
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    for s in syms:
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise GpundaError("check_consistency: the symbols differ in arguments or outputs")
    exes = [s.simple_bind(grad_req=grad_req, **dict(c)) for s, c in zip(syms, ctx_list)]
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    # inputs are drawn in name order, so a seed reproduces them
    for name, arr in sorted(exes[0].arg_dict.items()):
        if name not in arg_params:
            if use_uniform:
                arg_params[name] = np.random.uniform(-0.92 * scale, 0.92 * scale,
                                                     size=arr.shape).astype(rand_type)
            else:
                arg_params[name] = np.random.normal(size=arr.shape,
                                                    scale=scale).astype(rand_type)
    for name in exes[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_dict.values():
                if arr is not None:
                    arr[:] = 0

    for exe in exes:
        exe.forward(is_train=False)
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))

    def truth():
        if ground_truth is not None:
            return ground_truth
        gt = dict(exes[gt_idx].output_dict)
        if grad_req != "null":
            gt.update(exes[gt_idx].grad_dict)
        return gt
    gt = truth()
    for i, exe in enumerate(exes):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs):
                _compare(arr, gt[name], rtol, atol, equal_nan, raise_on_err,
                         f"Predict Err: ctx {i} vs ctx {gt_idx} at {name}")
    if grad_req == "null":
        return gt

    for exe in exes:
        exe.forward(is_train=True)
    # every run backpropagates the first run's outputs, cast to the least precise dtype
    least = [o.dtype for o in exes[0].outputs]
    for exe in exes:
        least = [_smaller_dtype(o.dtype, dt) for o, dt in zip(exe.outputs, least)]
    golden = [o.astype(dt).asnumpy() for o, dt in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([array(g, ctx=exe._ctx, dtype=o.dtype).tostype(o.stype)
                      for g, o in zip(golden, exe.outputs)])
    gt = truth()
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        pairs = list(zip(output_names, exe.outputs)) + [(n, exe.grad_dict.get(n))
                                                        for n in arg_names]
        for name, arr in pairs:
            gt_arr = gt.get(name)
            if gt_arr is None or arr is None:
                if (gt_arr is None) != (arr is None):
                    raise AssertionError(f"check_consistency: ctx {i} and ctx {gt_idx} differ in "
                                         f"whether {name} has a gradient")
                continue
            rt, at = rtol, atol
            # a float32 gradient of a float16 model (BatchNorm's gamma) is only float16-exact
            small_arr = _smaller_dtype(arr.dtype, dtypes[i])
            small_gt = _smaller_dtype(gt_arr.dtype, dtypes[gt_idx])
            if small_arr != arr.dtype or small_gt != gt_arr.dtype:
                rt, at = get_tols(np.zeros(0, small_arr), np.zeros(0, small_gt), rtol, atol)
            _compare(arr, gt_arr, rt, at, equal_nan, raise_on_err,
                     f"Train Err: {np.dtype(arr.dtype).name} ctx {i} vs "
                     f"{np.dtype(gt_arr.dtype).name} ctx {gt_idx} at {name}")
    return gt


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1E-4, atol=1E-4):
    """Check that a HybridBlock gives the same outputs (and input gradients) hybridized or not.

    ``net_builder(prefix='net_')`` builds the block; every build gets the first
    build's parameter values. The block must not draw random numbers.
    ``numpy_func``, if given, is the expected function of the inputs (as NumPy).
    """
    from gpunda import autograd
    saved_out, saved_grads, params = None, None, None
    modes = [False, True] if test_grad else [False]
    for hybridize in (False, True):
        for use_autograd in modes:
            net = net_builder(prefix="net_")
            net.initialize()
            if params is None:
                params = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
            else:
                for k, v in net.collect_params().items():
                    v.set_data(params[k])
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if saved_out is None:
                saved_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), saved_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if saved_grads is None:
                    saved_grads = grads
                else:
                    for g, want in zip(grads, saved_grads):
                        assert_almost_equal(g, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        want = numpy_func(*[as_host(x) for x in data_l])
        assert_almost_equal(saved_out, want, rtol=rtol, atol=atol)


def _pair(shape, stype, dtype, density=None):
    """(dense copy, array of ``stype``) with the same random values."""
    from gpunda import random
    from gpunda._testing.random_data import rand_ndarray
    ctx = default_context()
    if stype == "default":
        second = random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        return second.copyto(ctx), second
    if stype in ("row_sparse", "csr"):
        second = rand_ndarray(shape, stype, density=density, dtype=dtype)
        return second.copyto(ctx).tostype("default"), second
    raise GpundaError(f"compare_optimizer: storage type {stype!r} is not supported; use "
                      f"'default', 'row_sparse' or 'csr'")


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Check that two optimizers make the same update (and states) from the same start.

    With a list of shapes, ``opt2`` updates ``ntensors`` tensors in one
    multi-tensor call and ``opt1`` one at a time.
    """
    from gpunda import random
    if not isinstance(shape, list):
        if ntensors != 1:
            raise GpundaError("compare_optimizer: ntensors must be 1 for a single shape")
        w1, w2 = _pair(shape, w_stype, dtype, density=1)
        g1, g2 = _pair(shape, g_stype, dtype)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    ctx = default_context()
    w1 = tuple(random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2, g2 = tuple(w.copy() for w in w1), tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)
