"""``sym.contrib.foreach``, ``while_loop`` and ``cond``: Python bodies traced into
subgraphs of one ``_foreach`` / ``_while_loop`` / ``_cond`` node (ops/control_flow/loops.py).

As in MXNet, a body is called on fresh variables inside
``AttrScope(__subgraph_name__=<unique name>)``, so every node it creates carries
that attribute. The subgraph is what the body's outputs reach through such nodes;
an edge into it from any other node (an outer variable, or an outer result the
body closes over) is cut: the subgraph gets a variable named after that entry and
the outer entry becomes an input of the control-flow node. Variables the body
creates itself become inputs too (copied, so the subgraph shares no node with the
outer graph). The ``*_locs`` attributes say, per subgraph, where its inputs are
among the node's inputs, as MXNet's do.
"""
from __future__ import annotations

import threading

from gpunda._core.nesting import flatten, regroup as _regroup
from gpunda.attribute import AttrScope, current as _current_attrs
from gpunda.base import GpundaAssertionError, GpundaError
from gpunda import name as _name
from gpunda.ops.control_flow.loops import with_subgraphs
from gpunda.ops.registry import get_op
from gpunda.symbol.shape_rules import _RULES
from gpunda.symbol.symbol import Group, Symbol, _Node, topo_order

__all__ = ["foreach", "while_loop", "cond"]

_SUBGRAPH = "__subgraph_name__"


def _partial_rule(opname):
    # the ops' inference runs inside their subgraphs, so it also works from partial shapes
    infer = get_op(opname).infer_shape
    return lambda p, ins, outs: infer(p, ins)


_RULES.update({n: _partial_rule(n) for n in ("_foreach", "_while_loop", "_cond")})
_lock = threading.Lock()


def _leaf(x):
    if not isinstance(x, Symbol):
        return None
    n = len(x.list_outputs())
    return n if n > 1 else 0


def _flatten(args, what):
    """Flat list of Symbols and the nesting format (a Symbol of n outputs counts n)."""
    return flatten(args, _leaf, what, "Symbol")


def _unique_name(base):
    outer = _current_attrs()._attr.get(_SUBGRAPH, "")
    if outer:
        base = f"{outer}${base}"
    with _lock:
        # MXNet counts subgraph names in this class attribute (tests reset it)
        counts = AttrScope._subgraph_names
        counts[base] += 1
        return f"{base}{counts[base] - 1}"


def _entry(s, what):
    if not isinstance(s, Symbol):
        raise AssertionError(f"{what} should be a Symbol or a nested list of Symbols, got "
                             f"{type(s).__name__}")
    return s._outputs[0]


def _uniq_var_name(s):
    node, i = s._outputs[0]
    return f"{node.name}-{i}"


def _in_scope(node, name):
    return node.attrs.get(_SUBGRAPH) == name


def _make_graph(outputs, name):
    """The body's outputs as one Symbol; an output that is an input or an outer entry is
    passed through identity so that the subgraph's heads are its own nodes."""
    copy = get_op("_copy")
    heads = []
    for s in outputs:
        node, i = s._outputs[0]
        if node.op is None or not _in_scope(node, name) or (node, i) in heads:
            with AttrScope(**{_SUBGRAPH: name}):
                s = Symbol([(_Node(copy, _name.current().get(None, "identity"),
                                   dict(_current_attrs()._attr), [(node, i)],
                                   copy.parse_params({})), 0)])
        heads.append(s._outputs[0])
    return heads


def _cut(heads, name):
    """(subgraph Symbol, {input name: outer entry}) with every edge from outside cut."""
    memo, outer = {}, {}

    def entry_name(node, i):
        return node.name if node.op is None else node.output_names()[i]

    for n in topo_order(heads):
        if not _in_scope(n, name):
            continue
        if n.op is None:
            memo[id(n)] = _Node(None, n.name, dict(n.attrs), [], None)
            continue
        ins = []
        for c, i in n.inputs:
            if _in_scope(c, name):
                ins.append((memo[id(c)], 0 if c.op is None else i))
                continue
            nm = entry_name(c, i)
            prev = outer.get(nm)
            if prev is not None and prev[0][:2] != (c, i):
                raise GpundaError(f"control flow {name}: two different outer entries are both "
                                  f"named {nm!r}; give the symbols distinct names")
            if prev is None:
                outer[nm] = ((c, i), _Node(None, nm, {}, [], None))
            ins.append((outer[nm][1], 0))
        memo[id(n)] = _Node(n.op, n.name, dict(n.attrs), ins, n.p)
    sub = Symbol([(memo[id(n)], i if n.op is not None else 0) for n, i in heads])
    names = [v.name for v in sub._topo() if v.op is None]
    if len(set(names)) != len(names):
        raise AssertionError(f"The inputs of the subgraph don't have unique names: {names}")
    return sub, {nm: e for nm, (e, _) in outer.items()}


def _trace(name, make_vars, body):
    """Runs ``body`` on fresh variables inside the subgraph's attribute scope."""
    with AttrScope(**{_SUBGRAPH: name}):
        return body(make_vars())


def _input_for(nm, sub_vars, known, cut):
    """The outer entry feeding subgraph input ``nm``."""
    if nm in known:
        return known[nm]
    if nm in cut:
        return cut[nm]
    v = sub_vars[nm]
    # a variable the body made: the outer graph gets its own copy of it
    attrs = {k: a for k, a in v.attrs.items() if k != _SUBGRAPH}
    return (_Node(None, v.name, attrs, [], None), 0)


def _make_node(opname, subgraphs, inputs, attrs, num_outputs):
    op = get_op(opname)
    attrs = {k: _fmt(v) for k, v in attrs.items()}
    p = with_subgraphs(op.parse_params(attrs), subgraphs)
    node_attrs = dict(_current_attrs()._attr)
    node_attrs.update(attrs)
    node = _Node(op, _name.current().get(None, opname), node_attrs, list(inputs), p)
    return [Symbol([(node, i)]) for i in range(num_outputs)]


def _fmt(v):
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(int(x)) for x in v) + "]"
    return str(v)


# ---- MXNet's helpers of mx.sym.contrib under their names (python/mxnet/symbol/contrib.py) ----

# _regroup (imported above from _core.nesting) has MXNet's arguments: (flat, fmt)
_get_unique_subgraph_name = _unique_name


def _get_sym_uniq_name(sym):
    """``<node name>-<output index>`` of a single-output Symbol: the name MXNet gives the
    variable standing for that entry inside a subgraph."""
    return _uniq_var_name(sym)


def _get_graph_inputs(subg):
    """One variable Symbol per edge from a variable into an op node of ``subg``, in graph
    order (a variable used twice is listed twice; a graph that is only a variable has
    none)."""
    return [Symbol([(c, i)]) for n in topo_order(subg._outputs) for c, i in n.inputs
            if c.op is None]


def _cut_subgraph(subg):
    """Cut ``subg`` out of the graph it was built in, in place: every edge into one of its
    nodes (those whose ``__subgraph_name__`` is that of its first output's node) from a
    node outside becomes an edge from a new variable named after that entry, one variable
    per distinct entry. Returns the cut entries as Symbols, one per edge cut; ``[]`` when
    the first output carries no subgraph name."""
    name = subg._outputs[0][0].attrs.get(_SUBGRAPH)
    if name is None:
        return []
    cut, made = [], {}
    for n in topo_order(subg._outputs):
        if not _in_scope(n, name):
            continue
        inputs = list(n.inputs)
        for j, (c, i) in enumerate(inputs):
            if _in_scope(c, name):
                continue
            cut.append(Symbol([(c, i)]))
            var = made.get((id(c), i))
            if var is None:
                var = made[(id(c), i)] = _Node(None, c.output_names()[i], {}, [], None)
            inputs[j] = (var, 0)
        n.inputs = inputs
    return cut


def _construct_subgraph(sym_out, sym_states, name):
    """``Group(outputs + states)`` for the subgraph ``name``, where an entry that is an
    input of the group, comes from outside the subgraph, or (a state) is also an output
    goes through ``identity`` so that every head is a node of its own."""
    from gpunda.symbol.symbol import op as _op
    sym_out = sym_out if isinstance(sym_out, list) else [sym_out]
    sym_states = sym_states if isinstance(sym_states, list) else [sym_states]
    inputs = set(Group(sym_out + sym_states).list_inputs())
    out_names = {o.name for o in sym_out}
    heads = []
    for s in sym_out:
        keep = s.name not in inputs and s.list_attr().get(_SUBGRAPH, "") == name
        heads.append(s if keep else _op.identity(s))
    for s in sym_states:
        keep = (s.name not in inputs and s.name not in out_names
                and s.list_attr().get(_SUBGRAPH, "") == name)
        heads.append(s if keep else _op.identity(s))
    return Group(heads)


def _check_data(inputs, in_type, msg):
    """An AssertionError with ``msg`` unless ``inputs`` is an ``in_type`` or a list of
    them."""
    items = inputs if isinstance(inputs, list) else [inputs]
    if not all(isinstance(x, in_type) for x in items):
        raise GpundaAssertionError(msg)


_MXNET_HELPERS = ("_flatten", "_regroup", "_get_sym_uniq_name", "_get_graph_inputs",
                  "_cut_subgraph", "_get_unique_subgraph_name", "_construct_subgraph",
                  "_check_data")


def foreach(body, data, init_states, name="foreach"):
    """Run ``body`` over axis 0 of ``data`` as one ``_foreach`` node.

    ``out, states = body(data_slice, states)``; the outputs of all steps are stacked
    along a new axis 0 and the last states returned. ``data`` and ``init_states`` are
    Symbols or nested lists of Symbols.

    Example::

        step = lambda x, s: (x + s[0], [s[0] * 2])
        outs, states = mx.sym.contrib.foreach(step, mx.sym.var('data'), [mx.sym.var('s')])
    """
    flat_data, data_fmt = _flatten(data, "foreach input")
    flat_states, state_fmt = _flatten(init_states, "foreach states")
    for s in flat_data + flat_states:
        _entry(s, "foreach data and init_states")
    name = _unique_name(name)
    data_names = [_uniq_var_name(s) for s in flat_data]
    state_names = [_uniq_var_name(s) for s in flat_states]

    def run(_):
        from gpunda.symbol import var
        ins, _r = _regroup([var(n) for n in data_names], data_fmt)
        sts, _r = _regroup([var(n) for n in state_names], state_fmt)
        out, new_states = body(ins, sts)
        out, _f = _flatten(out, "foreach output")
        new_states, new_fmt = _flatten(new_states, "foreach loop_vars")
        if new_fmt != state_fmt:
            raise AssertionError("The input and output loop_vars have different format")
        return out, new_states, _make_graph(out + new_states, name), _f

    out, new_states, heads, out_fmt = _trace(name, lambda: None, run)
    sub, cut = _cut(heads, name)
    sub_vars = {v.name: v for v in sub._topo() if v.op is None}
    names = list(sub_vars)
    for nm in data_names + state_names:
        if nm not in names:
            raise AssertionError("the data arrays have to be used in the loop body"
                                 if nm in data_names else
                                 "the state arrays have to be used in the loop body")
    known = dict(zip(data_names, (_entry(s, "") for s in flat_data)))
    known.update(zip(state_names, (_entry(s, "") for s in flat_states)))
    remain = [nm for nm in names if nm not in data_names and nm not in state_names]
    inputs = [known[nm] for nm in data_names + state_names] + \
        [_input_for(nm, sub_vars, known, cut) for nm in remain]
    n_out = len(out) + len(new_states)
    res = _make_node("_foreach", [sub], inputs, dict(
        num_args=len(inputs) + 1, num_outputs=n_out, num_out_data=len(out),
        in_state_locs=[names.index(nm) for nm in state_names],
        in_data_locs=[names.index(nm) for nm in data_names],
        remain_locs=[names.index(nm) for nm in remain]), n_out)
    outs, _r = _regroup(res[:len(out)], out_fmt) if out else ([], None)
    states, _r = _regroup(res[len(out):], state_fmt)
    return outs, states


def _union(subs, known):
    """The node's inputs for several subgraphs, and each subgraph's locations in them."""
    inputs, where, locs = [], {}, []
    for sub, cut in subs:
        sub_vars = {v.name: v for v in sub._topo() if v.op is None}
        mine = []
        for nm in sub_vars:
            e = _input_for(nm, sub_vars, known, cut)
            key = (id(e[0]), e[1])
            if key not in where:
                where[key] = len(inputs)
                inputs.append(e)
                if nm not in known and nm not in cut:
                    known[nm] = e       # the copy of a body variable is shared
            mine.append(where[key])
        locs.append(mine)
    return inputs, locs


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Run ``func`` while ``cond`` holds, at most ``max_iterations`` times, as one
    ``_while_loop`` node.

    ``cond(*loop_vars)`` returns a scalar Symbol; ``func(*loop_vars)`` returns
    ``(step_output, new_loop_vars)``. Returns the step outputs stacked along axis 0
    (``max_iterations`` rows; rows past the last step are zeros) and the final loop
    variables.
    """
    flat_vars, var_fmt = _flatten(loop_vars, "while loop_vars")
    for s in flat_vars:
        _entry(s, "loop_vars")
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    if hasattr(max_iterations, "asscalar"):
        max_iterations = max_iterations.asscalar()
    try:
        max_iterations = int(max_iterations)
    except (TypeError, ValueError):
        raise ValueError("Cannot convert max_iteration to python int") from None
    if len(flat_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    var_names = [_uniq_var_name(s) for s in flat_vars]

    def make(base, fn):
        nm = _unique_name(base)

        def run(_):
            from gpunda.symbol import var
            vs, _r = _regroup([var(n) for n in var_names], var_fmt)
            outs, new_vars, fmt = fn(vs if isinstance(vs, list) else [vs])
            return outs, new_vars, _make_graph(outs + new_vars, nm), fmt
        outs, new_vars, heads, fmt = _trace(nm, lambda: None, run)
        return _cut(heads, nm), len(outs), len(outs) + len(new_vars), fmt

    def cond_fn(vs):
        r = cond(*vs)
        if not isinstance(r, Symbol):
            raise ValueError("Return of cond must be a Symbol")
        return [], [r], None

    def func_fn(vs):
        step, new_vars = func(*vs)
        step = [] if step is None else (list(step) if isinstance(step, tuple) else step)
        new_vars = [] if new_vars is None else (list(new_vars) if isinstance(new_vars, tuple)
                                                else new_vars)
        step, fmt = _flatten(step, "while output")
        new_vars, _f = _flatten(new_vars, "while loop_vars")
        if len(new_vars) != len(flat_vars):
            raise ValueError("The number of loop_vars should be consistent during the loop")
        return step, new_vars, fmt

    cond_g, _, _, _ = make(name + "_cond", cond_fn)
    func_g, n_out, n_all, out_fmt = make(name + "_func", func_fn)
    known = dict(zip(var_names, (_entry(s, "") for s in flat_vars)))
    inputs, (cond_locs, func_locs) = _union([cond_g, func_g], known)
    func_names = [v.name for v in func_g[0]._topo() if v.op is None]
    var_locs = []
    for k, nm in enumerate(var_names):
        if nm not in func_names:
            raise ValueError(f"The {k + 1}-th loop_var doesn't involve into the computation")
        var_locs.append(func_names.index(nm))
    res = _make_node("_while_loop", [cond_g[0], func_g[0]], inputs, dict(
        cond_input_locs=cond_locs, func_input_locs=func_locs, func_var_locs=var_locs,
        max_iterations=max_iterations, num_args=len(inputs) + 2, num_out_data=n_out,
        num_outputs=n_all), n_all)
    outs, _r = _regroup(res[:n_out], out_fmt) if n_out else ([], None)
    final, _r = _regroup(res[n_out:], var_fmt)
    return outs, final


def cond(pred, then_func, else_func, name="cond"):
    """``then_func()`` if the scalar Symbol ``pred`` is true, else ``else_func()``, as one
    ``_cond`` node; both branches return the same number of Symbols."""
    def make(base, fn):
        nm = _unique_name(base)

        def run(_):
            outs, fmt = _flatten(fn(), "cond outputs")
            return outs, _make_graph(outs, nm), fmt
        outs, heads, fmt = _trace(nm, lambda: None, run)
        return _cut(heads, nm), len(outs), fmt

    pred_g, n_pred, _ = make(name + "_pred", lambda: pred)
    if n_pred != 1:
        raise ValueError("pred should always be a single output")
    then_g, n_then, then_fmt = make(name + "_then", then_func)
    else_g, n_else, _ = make(name + "_else", else_func)
    if n_then != n_else:
        raise ValueError("Number of outputs differs between then-branch and else-branch")
    inputs, (c_locs, t_locs, e_locs) = _union([pred_g, then_g, else_g], {})
    res = _make_node("_cond", [pred_g[0], then_g[0], else_g[0]], inputs, dict(
        cond_input_locs=c_locs, then_input_locs=t_locs, else_input_locs=e_locs,
        num_args=len(inputs) + 3, num_outputs=n_then), n_then)
    outs, _r = _regroup(res, then_fmt)
    return outs
