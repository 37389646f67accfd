"""Running an optimizer formula on weights/gradients of any storage type.

An update formula is ``fn(w, g, *states) -> new weight or None`` on dense
backend arrays: it writes the states in place (``s[...] = ...``) and either
returns the new weight or changes ``w`` in place. ``run_update`` feeds it:

- a row_sparse gradient with ``lazy=True``: only the gradient's rows of the
  weight and states are updated (MXNet's lazy update: rows without a gradient
  get neither the step nor the weight decay);
- any other gradient: its dense values, every row updated (MXNet's standard
  update);
- a sparse weight or state: updated through a dense copy stored back in the
  same storage type afterwards.
"""
from __future__ import annotations

from types import SimpleNamespace

from gpunda._engine import autograd as _ag


def op_params(opt, lr, wd, **extra):
    """The parameter record the formulas of ``ops/optimizer/updates.py`` take."""
    clip = opt.clip_gradient
    return SimpleNamespace(lr=lr, wd=wd, rescale_grad=opt.rescale_grad,
                           clip_gradient=-1.0 if clip is None else float(clip), **extra)


def _dense_of(arr):
    """(backend dense array, is_copy) of an NDArray."""
    if arr.stype == "default":
        return arr._data, False
    from gpunda.ops.sparse.ops import to_dense
    return to_dense(arr._data), True


def _store(arr, dense):
    from gpunda.ops.sparse.ops import to_stype
    arr._data._rebind(to_stype(dense, arr.stype))


def run_update(weight, grad, states, fn, lazy=True):
    """Apply ``fn`` (see the module docstring) to ``weight`` with ``grad``; states
    are NDArrays (None entries are passed as None)."""
    w, w_copy = _dense_of(weight)
    raws = []
    for s in states:
        raws.append((None, False) if s is None else _dense_of(s))
    if grad.stype == "row_sparse" and lazy:
        rows = grad._data.indices
        g = grad._data.values
        if g.dtype != w.dtype:
            g = g.astype(w.dtype)
        sub_w = w[rows]
        subs = [None if r is None else r[rows] for r, _ in raws]
        new = fn(sub_w, g, *subs)
        w[rows] = sub_w if new is None else new
        for (r, _), sub in zip(raws, subs):
            if r is not None:
                r[rows] = sub
    else:
        g, _ = _dense_of(grad)
        if g.dtype != w.dtype:
            g = g.astype(w.dtype)
        new = fn(w, g, *[r for r, _ in raws])
        if new is not None:
            w[...] = new
    if w_copy:
        _store(weight, w)
    _ag.bump_version(weight)
    for s, (r, copied) in zip(states, raws):
        if s is not None:
            if copied:
                _store(s, r)
            _ag.bump_version(s)
