"""Autograd: recording state, the tape of recorded calls, backward and grad.

Each recorded call becomes a ``Node`` holding its op, params, the autograd
entries of its inputs and what its gradient rule needs. An NDArray produced
under ``record()`` carries ``_ag = (node, output_index)``; a variable (after
``attach_grad``) carries ``(Leaf, 0)``. ``backward`` sorts the nodes reachable
from the heads and applies each op's gradient rule in reverse order (see
NOTE [Gradient rules] in ops/registry.py).

In-place safety: every NDArray root has a version counter bumped by every
in-place write; a node remembers the versions of the arrays it saved and
backward refuses to use one that changed.
"""
from __future__ import annotations

import threading
import weakref

from .base import GpundaError

__all__ = ["is_recording", "is_training", "set_recording", "set_training", "record", "pause",
           "train_mode", "predict_mode", "mark_variables", "backward", "grad", "get_symbol",
           "Function"]


class _State(threading.local):
    # class attributes give every new thread "not recording, not training"
    recording = False
    training = False


_state = _State()


def is_recording():
    """Whether operations are being recorded for gradients (this thread)."""
    return _state.recording


def is_training():
    """Whether ops run in training mode (Dropout active, BatchNorm batch stats)."""
    return _state.training


def set_recording(is_record):
    """Set recording on or off for this thread; returns the previous value."""
    prev = _state.recording
    _state.recording = bool(is_record)
    return prev


def set_training(train_mode):
    """Set training mode for this thread; returns the previous value."""
    prev = _state.training
    _state.training = bool(train_mode)
    return prev


class _Scope:
    __slots__ = ("_rec", "_train", "_prev")

    def __init__(self, is_record, train_mode):
        self._rec, self._train, self._prev = is_record, train_mode, None

    def __enter__(self):
        self._prev = (_state.recording, _state.training)
        if self._rec is not None:
            _state.recording = self._rec
        if self._train is not None:
            _state.training = self._train
        return self

    def __exit__(self, *exc):
        _state.recording, _state.training = self._prev
        return False


def record(train_mode=True):
    """Scope that records ops for autograd (``with autograd.record():``)."""
    return _Scope(True, train_mode)


def pause(train_mode=False):
    """Scope that stops recording (e.g. for a metric inside ``record``)."""
    return _Scope(False, train_mode)


def train_mode():
    """Scope with training mode on, recording unchanged."""
    return _Scope(None, True)


def predict_mode():
    """Scope with training mode off, recording unchanged."""
    return _Scope(None, False)


# ---------------------------------------------------------------------------
# the tape

_GRAD_REQS = ("write", "add", "null")


class Leaf:
    """A variable: where gradients land (``x.grad``) and how (``grad_req``)."""

    __slots__ = ("grad", "grad_req", "_g", "__weakref__", "var")
    nout = 1
    is_leaf = True
    freed = False
    inputs = ()

    def __init__(self, grad, grad_req, var=None):
        self.grad, self.grad_req, self._g = grad, grad_req, None
        self.var = weakref.ref(var) if var is not None else None


class Node:
    """One recorded op call."""

    __slots__ = ("op", "p", "inputs", "saved_in", "in_versions", "out_data", "out_refs",
                 "nout", "training", "freed", "_g", "ctx", "__weakref__", "fn")
    is_leaf = False

    def __init__(self, op, p, inputs, saved_in, in_versions, out_data, out_refs, nout, training, ctx):
        self.op, self.p, self.inputs = op, p, inputs
        self.saved_in, self.in_versions = saved_in, in_versions
        self.out_data, self.out_refs = out_data, out_refs
        self.nout, self.training, self.freed, self._g, self.ctx = nout, training, False, None, ctx
        self.fn = None


def _record(op, p, inputs, outs):
    """Put one op call on the tape (called by invoke when recording)."""
    entries = tuple(x._ag for x in inputs)
    for e in entries:
        if e is not None:
            break
    else:
        return      # no input depends on a variable: nothing to differentiate
    save = op.save
    if "inputs" in save:
        saved_in = inputs
        in_versions = tuple((x._base if x._base is not None else x)._version for x in inputs)
    else:
        saved_in, in_versions = None, None
    if "outputs" in save:
        out_data = tuple(o._data for o in outs)
        out_refs = tuple((weakref.ref(o), 0) for o in outs)
    else:
        out_data = out_refs = None
    node = Node(op, p, entries, saved_in, in_versions, out_data, out_refs, len(outs),
                _state.training, outs[0]._ctx)
    for i, o in enumerate(outs):
        o._ag = (node, i)


def _retarget_output(node, i, target):
    """``out=`` moved output ``i`` of ``node`` into ``target``: track that array instead."""
    root = target._base if target._base is not None else target
    target._ag = (node, i)
    if node.out_refs is not None:
        refs = list(node.out_refs)
        refs[i] = (weakref.ref(root), root._version)
        node.out_refs = tuple(refs)


def check_writable(target, where):
    """Refuse to overwrite a variable that requires grad while recording."""
    e = target._ag
    if e is not None and e[0].is_leaf and e[0].grad_req != "null" and _state.recording:
        raise GpundaError(
            f"{where}: writing into an array that requires grad (attach_grad) inside "
            f"autograd.record() is not allowed; assign outside record() or detach() it")


def _check_versions(node):
    op = node.op
    if node.saved_in is not None:
        for i, (x, v) in enumerate(zip(node.saved_in, node.in_versions)):
            if (x._base if x._base is not None else x)._version != v:
                raise GpundaError(
                    f"Operator {op.name}: input {i} was modified in place after it was used "
                    f"in a recorded computation, so its gradient would be wrong; copy it "
                    f"before modifying it, or compute the gradient first")
    if node.out_refs is not None:
        for i, (r, v) in enumerate(node.out_refs):
            o = r()
            if o is not None and o._version != v:
                raise GpundaError(
                    f"Operator {op.name}: output {i} was modified in place after it was "
                    f"recorded, so its gradient would be wrong")


def _topo(heads):
    """Nodes reachable from head entries, inputs before users."""
    order, seen = [], set()
    stack = [(h[0], False) for h in heads]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        nid = id(node)
        if nid in seen:
            continue
        seen.add(nid)
        stack.append((node, True))
        for e in node.inputs:
            if e is not None and id(e[0]) not in seen:
                stack.append((e[0], False))
    return order


def _as_list(x):
    from .ndarray.ndarray import NDArray
    if isinstance(x, NDArray):
        return [x], True
    return list(x), False


class _RawF:
    """Registry ops applied straight to backend arrays (plain backward, nothing recorded)."""

    def __init__(self, xp, ctx):
        self._xp, self._ctx = xp, ctx

    def __getattr__(self, name):
        from .ops.registry import get_op
        op = get_op(name)
        xp, ctx = self._xp, self._ctx
        compute = op.compute
        nvis = op.fixed_nvis

        if op.wants_ctx:
            def f(*arrays, **kw):
                r = compute(xp, op.parse_params(kw), *arrays, ctx=ctx)
                return r if nvis == 1 or op.fixed_nout == 1 else list(r)[:nvis or op.n_visible(op.parse_params(kw))]
        else:
            def f(*arrays, **kw):
                r = compute(xp, op.parse_params(kw), *arrays)
                return r if nvis == 1 or op.fixed_nout == 1 else list(r)[:nvis or op.n_visible(op.parse_params(kw))]
        f.__name__ = name
        setattr(self, name, f)
        return f


_raw_fs = {}


def _raw_namespace(ctx):
    f = _raw_fs.get(ctx)
    if f is None:
        f = _raw_fs[ctx] = _RawF(ctx.backend.xp, ctx)
    return f


def _run_backward(heads, head_grads, variables, retain_graph, create_graph, train_mode, where):
    """Core of backward/grad. Returns gradients for ``variables`` entries (or None)."""
    from .ndarray import ndarray as _nda
    from . import ndarray as nd
    NDArray = _nda.NDArray
    head_list, _ = _as_list(heads)
    if head_grads is None:
        hg_list = [None] * len(head_list)
    else:
        hg_list, _ = _as_list(head_grads)
        if len(hg_list) != len(head_list):
            raise GpundaError(f"{where}: got {len(hg_list)} head_grads for {len(head_list)} heads")
    for i, h in enumerate(head_list):
        if not isinstance(h, NDArray):
            raise GpundaError(f"{where}: head {i} must be an NDArray, got {type(h).__name__}")
        if h._ag is None:
            raise GpundaError(
                f"{where}: head {i} (shape {h.shape}) was not recorded or is not connected to "
                f"any variable; call attach_grad() on the inputs and compute it inside "
                f"autograd.record()")
        if h._data.dtype.kind not in "fc":
            raise GpundaError(f"{where}: head {i} has dtype {h._data.dtype.name}; only floating "
                              f"point arrays can be differentiated")
    for i, (h, g) in enumerate(zip(head_list, hg_list)):
        if g is None:
            continue
        if not isinstance(g, NDArray):
            raise GpundaError(f"{where}: head_grads[{i}] must be an NDArray or None")
        if g.shape != h.shape:
            raise GpundaError(f"{where}: head_grads[{i}] has shape {g.shape} but head {i} "
                              f"has shape {h.shape}")
        if g._ctx != h._ctx:
            raise GpundaError(f"{where}: head_grads[{i}] is on {g._ctx} but head {i} is on {h._ctx}")
    heads_e = [h._ag for h in head_list]
    order = _topo(heads_e)
    for node in order:
        if node.freed:
            raise GpundaError(
                f"{where}: the graph through {node.op.name} was already freed by an earlier "
                f"backward; pass retain_graph=True to the first backward to run it again")
    for node in order:
        if not node.is_leaf:
            _check_versions(node)
    if variables is not None:
        var_entries = []
        for i, v in enumerate(variables):
            if not isinstance(v, NDArray) or v._ag is None:
                raise GpundaError(f"{where}: variables[{i}] is not marked for gradients; "
                                  f"call attach_grad() or mark_variables() first")
            var_entries.append(v._ag)
        reach = {id(n) for n in order}
        for i, e in enumerate(var_entries):
            if id(e[0]) not in reach:
                raise GpundaError(f"{where}: variables[{i}] (shape {variables[i].shape}) is "
                                  f"not part of the graph that computed the heads")
    else:
        if not any(n.is_leaf for n in order):
            raise GpundaError(f"{where}: the heads are not connected to any variable with "
                              f"attach_grad()")

    ctx = head_list[0]._ctx
    if create_graph:
        F = nd
        wrap = lambda data, node, i: _wrap_out(NDArray, data, ctx, node, i)  # noqa: E731
    else:
        F = _raw_namespace(ctx)
        wrap = None
    for node in order:
        node._g = [None] * node.nout
    prev = (_state.recording, _state.training)
    _state.recording = bool(create_graph)
    _state.training = bool(train_mode)
    try:
        for h, g, (node, idx) in zip(head_list, hg_list, heads_e):
            if g is None:
                g = nd.ones_like(h) if create_graph else h._ctx.backend.xp.ones(h.shape, h.dtype)
            elif not create_graph:
                g = g._data
            _accum(node, idx, g)
        for node in reversed(order):
            if node.is_leaf:
                continue
            gs = node._g
            if all(g is None for g in gs):
                continue
            _apply_rule(node, F, create_graph, wrap, ctx)
    except GpundaError:
        for node in order:
            node._g = None
        raise
    finally:
        _state.recording, _state.training = prev

    result = None
    if variables is not None:
        result = []
        for v, (node, idx) in zip(variables, var_entries):
            g = node._g[idx]
            if g is None:
                g = nd.zeros_like(v) if create_graph else None
                if g is None:
                    g = v._ctx.backend.xp.zeros(v.shape, v.dtype)
            if not create_graph:
                g = _nda._new(g, v._ctx)
            result.append(g)
    else:
        for node in order:
            if node.is_leaf and node.grad_req != "null" and node.grad is not None:
                g = node._g[0]
                if g is None:
                    g = node.grad._ctx.backend.xp.zeros(node.grad.shape, node.grad.dtype)
                if isinstance(g, NDArray):
                    g = g._data
                _write_grad(node, g)
    for node in order:
        node._g = None
        if not retain_graph and not node.is_leaf:
            node.freed = True
            node.saved_in = node.out_data = node.out_refs = None
    return result


def _wrap_out(NDArray, data, ctx, node, i):
    from .ndarray.ndarray import _new
    a = _new(data, ctx)
    a._ag = (node, i)
    return a


def _accum(node, idx, g):
    cur = node._g[idx]
    node._g[idx] = g if cur is None else cur + g


def _apply_rule(node, F, create_graph, wrap, ctx):
    op, p = node.op, node.p
    rule = op.gradient
    if rule is None:
        raise GpundaError(f"Operator {op.name} has no gradient rule; it cannot be "
                          f"differentiated")
    xp = ctx._xp
    if create_graph:
        ins = list(node.saved_in) if node.saved_in is not None else None
        outs = ([wrap(d, node, i) for i, d in enumerate(node.out_data)]
                if node.out_data is not None else None)
        from . import ndarray as nd
        ograds = [g if g is not None else nd.zeros_like(outs[i]) if outs is not None else None
                  for i, g in enumerate(node._g)]
    else:
        ins = [x._data for x in node.saved_in] if node.saved_in is not None else None
        outs = node.out_data
        ograds = node._g
        if any(g is None for g in ograds):
            ograds = [g if g is not None else
                      (xp.zeros_like(outs[i]) if outs is not None else None)
                      for i, g in enumerate(ograds)]
    prev_train = _state.training
    _state.training = node.training
    try:
        if node.fn is not None:
            grads = node.fn(F, p, ins, outs, ograds)
        else:
            grads = rule(F, p, ins, outs, ograds)
    except GpundaError:
        raise
    except Exception as e:
        raise GpundaError(f"Operator {op.name}: gradient failed: {e}") from e
    finally:
        _state.training = prev_train
    for e, g in zip(node.inputs, grads):
        if e is None or g is None:
            continue
        _accum(e[0], e[1], g)


def _write_grad(leaf, g):
    buf = leaf.grad
    if g.shape != buf.shape:
        g = buf._ctx.backend.xp.broadcast_to(g, buf.shape)
    if leaf.grad_req == "add":
        buf._data += g.astype(buf.dtype, copy=False) if g.dtype != buf.dtype else g
    else:
        buf._data[...] = g
    (buf._base if buf._base is not None else buf)._version += 1


# ---------------------------------------------------------------------------
# public entry points

def mark_variables(variables, gradients, grad_reqs="write"):
    """Mark arrays as variables whose gradients go into ``gradients``.

    ``grad_reqs`` is 'write', 'add' or 'null', one value or one per variable.
    """
    from .ndarray.ndarray import NDArray
    vs, _ = _as_list(variables)
    gs, _ = _as_list(gradients)
    if len(vs) != len(gs):
        raise GpundaError(f"mark_variables: {len(vs)} variables but {len(gs)} gradients")
    reqs = [grad_reqs] * len(vs) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(vs):
        raise GpundaError(f"mark_variables: {len(vs)} variables but {len(reqs)} grad_reqs")
    for i, (v, g, r) in enumerate(zip(vs, gs, reqs)):
        if r not in _GRAD_REQS:
            raise GpundaError(f"mark_variables: grad_reqs[{i}]={r!r} is not one of {list(_GRAD_REQS)}")
        if not isinstance(v, NDArray) or not isinstance(g, NDArray):
            raise GpundaError(f"mark_variables: variables[{i}] and gradients[{i}] must be NDArrays")
        if g.shape != v.shape:
            raise GpundaError(f"mark_variables: gradients[{i}] has shape {g.shape} but "
                              f"variables[{i}] has shape {v.shape}")
    for v, g, r in zip(vs, gs, reqs):
        v._ag = (Leaf(g, r, v), 0)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute gradients of ``heads`` into the ``.grad`` of every variable reached."""
    _run_backward(heads, head_grads, None, retain_graph, False, train_mode, "backward")


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of ``heads`` with respect to ``variables``, without touching ``.grad``.

    With ``create_graph=True`` the result is recorded, so it can be
    differentiated again. Returns a list (or one NDArray if one variable was given).
    """
    from .ndarray.ndarray import NDArray
    single = isinstance(variables, NDArray)
    vs = [variables] if single else list(variables)
    if retain_graph is None:
        retain_graph = create_graph
    res = _run_backward(heads, head_grads, vs, retain_graph, create_graph, train_mode, "grad")
    return res[0] if single else res


def get_symbol(x):
    """The recorded history of ``x`` as a Symbol."""
    from .symbol.trace import symbol_from_tape
    return symbol_from_tape(x)


class Function:
    """A user-defined differentiable function (MXNet's ``autograd.Function``).

    Subclass it, define ``forward(self, *inputs)`` and ``backward(self,
    *output_grads)`` on NDArrays, call ``save_for_backward`` in forward, and
    call an instance like a function.
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keep arrays for ``backward`` (available as ``self.saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        from .ops.custom import call_function
        return call_function(self, inputs)
