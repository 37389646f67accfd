"""``nd.contrib.foreach``, ``while_loop`` and ``cond``: the imperative forms, which run
the Python bodies step by step (differentiable through autograd like any NDArray
code). The symbolic forms are in gpunda/symbol/control_flow.py."""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda._core.nesting import flatten, regroup as _regroup
from gpunda.ndarray.ndarray import NDArray

__all__ = ["foreach", "while_loop", "cond"]


def _leaf(x):
    return 0 if isinstance(x, NDArray) else None


def _flatten(args, what):
    return flatten(args, _leaf, what, "NDArray")


def _check(flat, msg):
    if not all(isinstance(x, NDArray) for x in flat):
        raise AssertionError(msg)


def _to_scalar(x, type_, what):
    if isinstance(x, NDArray):
        x = x.asscalar()
    try:
        return type_(x)
    except Exception:
        raise ValueError(f"Cannot convert {what} to python {type_.__name__}") from None


def foreach(body, data, init_states):
    """Run ``out, states = body(data[i], states)`` for every ``i`` along axis 0.

    ``data`` is an NDArray or a nested list of them (then ``body`` gets the list of
    slices); returns the step outputs stacked along a new axis 0 and the final states.

    Example::

        step = lambda x, s: (x + s[0], [s[0] * 2])
        outs, states = mx.nd.contrib.foreach(step, mx.nd.ones((3, 2)), [mx.nd.zeros(2)])
    """
    from gpunda.ndarray import stack
    flat, _ = _flatten(data, "foreach input")
    _check(flat, "data should be an NDArray or a nested list of NDArrays")
    flat_states, _ = _flatten(init_states, "foreach states")
    _check(flat_states, "init_states should be an NDArray or a nested list of NDArrays")
    single = isinstance(data, NDArray)
    steps = data.shape[0] if single else data[0].shape[0]
    states, outputs, out_fmt = init_states, [], None
    for i in range(steps):
        eles = data[i] if single else [d[i] for d in data]
        outs, states = body(eles, states)
        outs, out_fmt = _flatten(outs, "foreach output")
        outputs.append(outs)
    stacked = [stack(*items) for items in zip(*outputs)]
    if out_fmt is not None:
        stacked, _ = _regroup(stacked, out_fmt)
    return stacked, states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run ``step_output, loop_vars = func(*loop_vars)`` while ``cond(*loop_vars)`` is
    true, at most ``max_iterations`` times.

    Returns the step outputs stacked along axis 0 and padded to ``max_iterations``
    rows (the padding is zeros; MXNet leaves it uninitialised) and the final loop
    variables. When no step runs the first list is empty, as in MXNet.
    """
    from gpunda.ndarray import concat, zeros
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _to_scalar(max_iterations, int, "max_iteration")
    single = isinstance(loop_vars, NDArray)
    if not single and len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    loop_vars = [loop_vars] if single else list(loop_vars)
    steps, outputs, out_fmt = 0, [], None
    while steps < max_iterations and _to_scalar(cond(*loop_vars), bool,
                                                "Return value of cond"):
        step_output, new_vars = func(*loop_vars)
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        step_output = list(step_output) if isinstance(step_output, tuple) else step_output
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError("The length of loop_vars should be consistent during the loop")
        loop_vars = new_vars
        step_output, out_fmt = _flatten(step_output, "while output")
        outputs.append(step_output)
        steps += 1
        if len(step_output) != len(outputs[0]):
            raise ValueError("Number of elements in step_output should be the same in each "
                             "step")
    stacked = []
    for k, items in enumerate(zip(*outputs), 1):
        items = [x.expand_dims(0) for x in items]
        if steps != max_iterations and items:
            pad = zeros((max_iterations - steps,) + tuple(items[0].shape[1:]),
                        ctx=items[0].context, dtype=items[0].dtype)
            items = items + [pad]
        try:
            stacked.append(concat(*items, dim=0))
        except GpundaError:
            raise ValueError("\n".join(
                [f"Shapes of {k}-th elements in step_outputs are inconsistent, which are:"] +
                [f"  Step {i}, shape is {x.shape}" for i, x in enumerate(items)])) from None
    if out_fmt is not None:
        stacked, _ = _regroup(stacked, out_fmt)
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func):
    """``then_func()`` if the scalar ``pred`` is true, else ``else_func()``."""
    return then_func() if _to_scalar(pred, bool, "pred") else else_func()
