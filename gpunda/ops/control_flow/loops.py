"""The symbolic control-flow ops ``_foreach``, ``_while_loop`` and ``_cond`` (MXNet 1.9.1
``src/operator/control_flow.cc``).

Each node carries its body graphs as Symbols in ``p._subgraphs`` (MXNet stores them
in the node's "subgraphs" JSON field); ``with_subgraphs`` attaches them to a copy of
the parsed params, so two nodes with equal attributes never share bodies. The
attributes say where each subgraph input comes from (the ``*_locs`` lists, as in
MXNet). ``gpunda/symbol/control_flow.py`` builds these nodes from Python bodies;
``nd.contrib.foreach`` & co. run the bodies imperatively instead.

# NOTE [Control-flow bodies]
A body runs as a CachedOp of its subgraph, on raw arrays, once per step. The
backward recomputes the forward steps (keeping each step's inputs, not its
intermediates) and walks them in reverse, applying the body's own gradient rules
through ``cached_op._cached_backward``; so a body holding Dropout draws new masks in
the backward. The rules run on raw arrays only: the gradient of a control-flow op
is once-differentiable (a second order raises). Outputs of a while_loop past the
last step are zeros (MXNet leaves that memory uninitialised).
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda._core import hooks
from gpunda.ops._util import not_differentiable
from gpunda.ops.raw import RawF, raw_namespace
from gpunda.ops.registry import OpDef, Param, register

_HOST = "data-dependent control flow: the loop runs on the host"


def with_subgraphs(p, subgraphs):
    """A copy of params ``p`` carrying ``subgraphs`` (a list of Symbols)."""
    q = p.replace()
    q.__dict__["_subgraphs"] = list(subgraphs)
    q.__dict__["_cops"] = [None] * len(subgraphs)
    return q


def _body(p, k):
    """The CachedOp running subgraph ``k`` of a node (made on first use)."""
    subs = getattr(p, "_subgraphs", None)
    if subs is None:
        raise GpundaError("control flow: this node has no subgraph; build it with "
                          "sym.contrib.foreach/while_loop/cond")
    cop = p._cops[k]
    if cop is None:
        cop = p._cops[k] = hooks.CachedOp(subs[k])
    return cop


def _run(p, k, xp, ctx, arrays):
    return _body(p, k)._compute(xp, ctx, list(arrays), False)[1]


def _vjp(p, k, xp, ctx, F, arrays, head_grads):
    """Gradients of subgraph ``k``'s inputs at ``arrays`` for ``head_grads`` (zeros where
    an input does not reach the outputs)."""
    return _body(p, k)._vjp(xp, ctx, F, arrays, head_grads)


def _as_bool(xp, x, opname):
    if x.size != 1:
        raise GpundaError(f"Operator {opname}: the condition must be a scalar (one element), "
                          f"got shape {tuple(x.shape)}")
    return bool(x.reshape(-1)[0])


def _gradient(grad_op):
    """The rule of a control-flow op: its ``_backward_*`` op on the output gradients (zeros
    for outputs nobody used) and the inputs; recorded when F records (create_graph)."""
    def rule(F, p, ins, outs, ograds):
        if isinstance(F, RawF):
            xp = F._xp
            filled = [xp.zeros_like(o) if g is None else g for g, o in zip(ograds, outs)]
            return list(grad_op.compute(xp, p, *filled, *ins, ctx=F._ctx))
        invoke_parsed = hooks.invoke_parsed
        filled = [F.zeros_like(o) if g is None else g for g, o in zip(ograds, outs)]
        r = invoke_parsed(grad_op, tuple(filled) + tuple(ins), p)
        return list(r) if isinstance(r, (list, tuple)) else [r]
    return rule


def _arg_names(n_subgraphs):
    """Input names of a node whose ``num_args`` counts its ``n_subgraphs`` subgraphs."""
    return lambda p: tuple(f"data{i}" for i in range(p.num_args - n_subgraphs))


def _grad_names(n_subgraphs):
    args = _arg_names(n_subgraphs)
    return lambda p: tuple(f"ograd{i}" for i in range(p.num_outputs)) + args(p)


def _register_loop_op(name, compute, grad_compute, params, n_subgraphs, infer_shape,
                      infer_type, doc, check=None):
    """Register control-flow op ``name`` (``n_subgraphs`` subgraphs counted in num_args)
    and its once-differentiable ``_backward_<name[1:]>`` op, which its gradient rule runs."""
    common = dict(params=params, check=check, wants_ctx=True, capture=_HOST, hidden=True,
                  family="control_flow")
    grad_op = register(OpDef(
        "_backward" + name, grad_compute, inputs=_grad_names(n_subgraphs),
        num_outputs=lambda p: p.num_args - n_subgraphs,
        gradient=not_differentiable("_backward" + name), save=(),
        doc=f"{name}'s gradients wrt its inputs.", **common))
    register(OpDef(
        name, compute, inputs=_arg_names(n_subgraphs), num_outputs=lambda p: p.num_outputs,
        gradient=_gradient(grad_op), save=("inputs", "outputs"), infer_shape=infer_shape,
        infer_type=infer_type, doc=doc, **common))


def _place(n, pairs):
    out = [None] * n
    for loc, a in pairs:
        out[loc] = a
    return out


# ----------------------------------------------------------------------------- foreach


def _step(d, t):
    """Step ``t`` of data ``d``; a 1-D array's step keeps one axis (MXNet's NDArray::At)."""
    return d[t:t + 1] if d.ndim == 1 else d[t]


def _foreach(xp, p, *arrays, ctx=None):
    nd_, ns = len(p.in_data_locs), len(p.in_state_locs)
    data, states, rest = arrays[:nd_], list(arrays[nd_:nd_ + ns]), arrays[nd_ + ns:]
    nsub = nd_ + ns + len(rest)
    steps = data[0].shape[0]
    outs = [[] for _ in range(p.num_out_data)]
    for t in range(steps):
        sub = _place(nsub, list(zip(p.in_data_locs, (_step(d, t) for d in data))) +
                     list(zip(p.in_state_locs, states)) + list(zip(p.remain_locs, rest)))
        res = _run(p, 0, xp, ctx, sub)
        for i in range(p.num_out_data):
            outs[i].append(res[i])
        states = list(res[p.num_out_data:])
    return tuple([xp.stack(o) for o in outs] + [xp.array(s, copy=True) for s in states])


def _foreach_grad(xp, p, *arrays, ctx=None):
    no = p.num_outputs
    ograds, ins = arrays[:no], arrays[no:]
    nd_, ns = len(p.in_data_locs), len(p.in_state_locs)
    data, states, rest = ins[:nd_], list(ins[nd_:nd_ + ns]), ins[nd_ + ns:]
    nsub = nd_ + ns + len(rest)
    steps = data[0].shape[0]
    step_inputs = []
    for t in range(steps):
        sub = _place(nsub, list(zip(p.in_data_locs, (_step(d, t) for d in data))) +
                     list(zip(p.in_state_locs, states)) + list(zip(p.remain_locs, rest)))
        step_inputs.append(sub)
        if t + 1 < steps:
            states = list(_run(p, 0, xp, ctx, sub)[p.num_out_data:])
    F = raw_namespace(ctx)
    g_data = [xp.zeros_like(d) for d in data]
    g_rest = [xp.zeros_like(r) for r in rest]
    g_states = list(ograds[p.num_out_data:])
    for t in reversed(range(steps)):
        heads = [g[t] for g in ograds[:p.num_out_data]] + g_states
        g = _vjp(p, 0, xp, ctx, F, step_inputs[t], heads)
        for i, loc in enumerate(p.in_data_locs):
            g_data[i][t] = g[loc].reshape(g_data[i][t].shape)
        g_states = [g[loc] for loc in p.in_state_locs]
        for i, loc in enumerate(p.remain_locs):
            g_rest[i] += g[loc]
    return tuple(g_data + g_states + g_rest)


_FOREACH_PARAMS = [Param("num_args", "int", doc="inputs, the subgraph counted as one"),
                   Param("num_outputs", "int"), Param("num_out_data", "int"),
                   Param("in_state_locs", "shape"), Param("in_data_locs", "shape"),
                   Param("remain_locs", "shape")]


def _infer_sub(p, k, in_shapes, in_types=None):
    """Shape (and dtype) inference inside subgraph ``k`` from what is known of its inputs
    (internal shapes: None or -1 where unknown); returns (input shapes, output shapes,
    input types, output types)."""
    sub = p._subgraphs[k]
    names = [v for v in sub._topo() if v.op is None]
    given = {v.name: tuple(s) for v, s in zip(names, in_shapes) if s is not None}
    types = {v.name: t for v, t in zip(names, in_types or ()) if t is not None}
    shapes, dtypes = hooks.infer_graph(sub, given, types, hooks.var_shape)
    keys_in = [(id(v), 0) for v in names]
    keys_out = [(id(n), i) for n, i in sub._outputs]
    return ([shapes.get(key) for key in keys_in], [shapes.get(key) for key in keys_out],
            [dtypes.get(key) for key in keys_in], [dtypes.get(key) for key in keys_out])


def _better(outer, inner):
    """The subgraph's view of an input shape (it started from ``outer``), when it has one."""
    return outer if inner is None else inner


def _slice_first(s):
    """The shape of one step of data shaped ``s``: a 1-D array's step is (1,), as in MXNet."""
    if s is None:
        return None
    return (1,) if len(s) == 1 else tuple(s[1:])


def _foreach_sub_inputs(p, values, step_of):
    nd_, ns = len(p.in_data_locs), len(p.in_state_locs)
    return _place(len(values), [(loc, step_of(v)) for loc, v in zip(p.in_data_locs,
                                                                    values[:nd_])] +
                  list(zip(p.in_state_locs, values[nd_:nd_ + ns])) +
                  list(zip(p.remain_locs, values[nd_ + ns:])))


def _infer_foreach(p, in_shapes):
    nd_, ns = len(p.in_data_locs), len(p.in_state_locs)
    shapes = [None if s is None else tuple(s) for s in in_shapes]
    sub_in, sub_out, _, _ = _infer_sub(p, 0, _foreach_sub_inputs(p, shapes, _slice_first))
    steps = shapes[0][0] if shapes and shapes[0] is not None else -1
    for i, loc in enumerate(p.in_data_locs):
        if sub_in[loc] is not None and (shapes[i] is None or -1 in shapes[i]):
            one_d = len(sub_in[loc]) == 1 and sub_in[loc][0] == 1
            shapes[i] = (steps,) if one_d else (steps,) + sub_in[loc]
    for i, loc in enumerate(p.in_state_locs):
        shapes[nd_ + i] = _better(shapes[nd_ + i], sub_in[loc])
    for i, loc in enumerate(p.remain_locs):
        shapes[nd_ + ns + i] = _better(shapes[nd_ + ns + i], sub_in[loc])
    outs = [None if s is None else (steps,) + s for s in sub_out[:p.num_out_data]]
    outs += sub_out[p.num_out_data:]
    return shapes, outs


def _infer_type_foreach(p, in_types):
    values = list(in_types)
    _, _, sub_t, out_t = _infer_sub(p, 0, [None] * len(values),
                                    _foreach_sub_inputs(p, values, lambda t: t))
    return _back_types(values, sub_t, _foreach_sub_inputs(p, list(range(len(values))),
                                                          lambda i: i)), out_t


def _back_types(values, sub_t, sources):
    """Input dtypes completed from the subgraph's (``sources[j]``: the input feeding
    subgraph input j)."""
    values = list(values)
    for j, src in enumerate(sources):
        if src is not None and values[src] is None:
            values[src] = sub_t[j]
    return values


_register_loop_op(
    "_foreach", _foreach, _foreach_grad, _FOREACH_PARAMS, 1, _infer_foreach,
    _infer_type_foreach,
    "Runs its subgraph over axis 0 of the data inputs, carrying states (contrib.foreach).")


# -------------------------------------------------------------------------- while_loop


def _cond_map(p):
    """For each cond input, the loop variable feeding it (-1: a fixed input)."""
    var_of_input = {p.func_input_locs[loc]: k for k, loc in enumerate(p.func_var_locs)}
    return [var_of_input.get(i, -1) for i in p.cond_input_locs]


def _while_steps(xp, p, arrays, ctx, keep_inputs):
    """Runs the loop; returns (per-step outputs, final func inputs, per-step func inputs)."""
    func_in = [arrays[i] for i in p.func_input_locs]
    cond_in = [arrays[i] for i in p.cond_input_locs]
    cmap = _cond_map(p)
    outs, history = [], []
    for _ in range(p.max_iterations):
        if not _as_bool(xp, _run(p, 0, xp, ctx, cond_in)[0], "_while_loop"):
            break
        if keep_inputs:
            history.append(list(func_in))
        res = _run(p, 1, xp, ctx, func_in)
        outs.append(res[:p.num_out_data])
        new_vars = res[p.num_out_data:]
        for k, loc in enumerate(p.func_var_locs):
            func_in[loc] = new_vars[k]
        for j, k in enumerate(cmap):
            if k >= 0:
                cond_in[j] = new_vars[k]
    return outs, func_in, history


def _step_out_shapes(p, arrays):
    _, outs, _, _ = _infer_sub(p, 1, [tuple(arrays[i].shape) for i in p.func_input_locs])
    return outs[:p.num_out_data]


def _while_loop(xp, p, *arrays, ctx=None):
    outs, func_in, _ = _while_steps(xp, p, arrays, ctx, False)
    res = []
    for i in range(p.num_out_data):
        if outs:
            first = outs[0][i]
            full = xp.zeros((p.max_iterations,) + tuple(first.shape), dtype=first.dtype)
            full[:len(outs)] = xp.stack([o[i] for o in outs])
        else:
            shape = _step_out_shapes(p, arrays)[i]
            if shape is None:
                raise GpundaError("Operator _while_loop: the loop ran no step and the shape of "
                                  f"step output {i} cannot be inferred")
            full = xp.zeros((p.max_iterations,) + shape, dtype=arrays[0].dtype)
        res.append(full)
    res += [xp.array(func_in[loc], copy=True) for loc in p.func_var_locs]
    return tuple(res)


def _while_loop_grad(xp, p, *arrays, ctx=None):
    no = p.num_outputs
    ograds, ins = arrays[:no], arrays[no:]
    _, _, history = _while_steps(xp, p, ins, ctx, True)
    F = raw_namespace(ctx)
    g_ins = [xp.zeros_like(a) for a in ins]
    g_vars = list(ograds[p.num_out_data:])
    var_locs = set(p.func_var_locs)
    for t in reversed(range(len(history))):
        heads = [g[t] for g in ograds[:p.num_out_data]] + g_vars
        g = _vjp(p, 1, xp, ctx, F, history[t], heads)
        for j, loc in enumerate(p.func_input_locs):
            if j not in var_locs:
                g_ins[loc] += g[j]
        g_vars = [g[loc] for loc in p.func_var_locs]
    for k, loc in enumerate(p.func_var_locs):
        g_ins[p.func_input_locs[loc]] += g_vars[k]
    return tuple(g_ins)


_WHILE_PARAMS = [Param("num_args", "int"), Param("num_outputs", "int"),
                 Param("num_out_data", "int"), Param("max_iterations", "int"),
                 Param("cond_input_locs", "shape"), Param("func_input_locs", "shape"),
                 Param("func_var_locs", "shape")]


def _check_while(p):
    if p.max_iterations < 1:
        raise GpundaError(f"Operator _while_loop: max_iterations={p.max_iterations} must be "
                          f">= 1")


def _infer_while(p, in_shapes):
    shapes = [None if s is None else tuple(s) for s in in_shapes]
    sub_in, sub_out, _, _ = _infer_sub(p, 1, [shapes[i] for i in p.func_input_locs])
    for j, loc in enumerate(p.func_input_locs):
        shapes[loc] = _better(shapes[loc], sub_in[j])
    outs = [None if s is None else (p.max_iterations,) + s for s in sub_out[:p.num_out_data]]
    outs += [_better(shapes[p.func_input_locs[loc]], sub_out[p.num_out_data + k])
             for k, loc in enumerate(p.func_var_locs)]
    return shapes, outs


def _infer_type_while(p, in_types):
    values = list(in_types)
    _, _, sub_t, out_t = _infer_sub(p, 1, [None] * len(p.func_input_locs),
                                    [values[i] for i in p.func_input_locs])
    return _back_types(values, sub_t, p.func_input_locs), out_t


_register_loop_op(
    "_while_loop", _while_loop, _while_loop_grad, _WHILE_PARAMS, 2, _infer_while,
    _infer_type_while,
    "Runs its func subgraph while its cond subgraph is true, at most max_iterations times; "
    "step outputs are stacked and padded to max_iterations (contrib.while_loop).",
    check=_check_while)


# -------------------------------------------------------------------------------- cond


def _branch(xp, p, arrays, ctx):
    pred = _run(p, 0, xp, ctx, [arrays[i] for i in p.cond_input_locs])[0]
    return (1, p.then_input_locs) if _as_bool(xp, pred, "_cond") else (2, p.else_input_locs)


def _cond(xp, p, *arrays, ctx=None):
    k, locs = _branch(xp, p, arrays, ctx)
    res = _run(p, k, xp, ctx, [arrays[i] for i in locs])
    return tuple(xp.array(r, copy=True) for r in res)


def _cond_grad(xp, p, *arrays, ctx=None):
    ograds, ins = arrays[:p.num_outputs], arrays[p.num_outputs:]
    k, locs = _branch(xp, p, ins, ctx)
    g = _vjp(p, k, xp, ctx, raw_namespace(ctx), [ins[i] for i in locs], ograds)
    g_ins = [xp.zeros_like(a) for a in ins]
    for j, loc in enumerate(locs):
        g_ins[loc] += g[j]
    return tuple(g_ins)


_COND_PARAMS = [Param("num_args", "int"), Param("num_outputs", "int"),
                Param("cond_input_locs", "shape"), Param("then_input_locs", "shape"),
                Param("else_input_locs", "shape")]


def _infer_cond(p, in_shapes):
    shapes = [None if s is None else tuple(s) for s in in_shapes]
    outs = None
    for k, locs in ((1, p.then_input_locs), (2, p.else_input_locs)):
        sub_in, sub_out, _, _ = _infer_sub(p, k, [shapes[i] for i in locs])
        for j, loc in enumerate(locs):
            shapes[loc] = _better(shapes[loc], sub_in[j])
        outs = sub_out if outs is None else [a or b for a, b in zip(outs, sub_out)]
    return shapes, outs


def _infer_type_cond(p, in_types):
    values, outs = list(in_types), None
    for k, locs in ((1, p.then_input_locs), (2, p.else_input_locs)):
        _, _, sub_t, out_t = _infer_sub(p, k, [None] * len(locs), [values[i] for i in locs])
        values = _back_types(values, sub_t, locs)
        outs = out_t if outs is None else [a or b for a, b in zip(outs, out_t)]
    return values, outs


_register_loop_op(
    "_cond", _cond, _cond_grad, _COND_PARAMS, 3, _infer_cond, _infer_type_cond,
    "Runs its then or else subgraph as its cond subgraph is true or false (contrib.cond).")
