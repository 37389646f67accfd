"""MXNet 1.x's graph ops for DGL on csr adjacency matrices whose values are edge ids.

- ``_contrib_edge_id(data, u, v)``: ``data[u[i], v[i]]`` where the edge exists, else -1.
- ``_contrib_dgl_adjacency(data)``: the same structure with float32 ones.
- ``_contrib_dgl_subgraph(graph, *vertex_sets)``: the induced subgraph of each sorted
  vertex set, its edges renumbered 0, 1, ... in csr order; with ``return_mapping``
  also the subgraph holding the original edge ids (outputs: all renumbered graphs,
  then all mappings).

The neighbour samplers and ``dgl_graph_compact`` are in dgl_sampling.py. Every op
here works on the csr parts (row pointers, column indices) without densifying.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.sparse.ops import CSRData, INDEX, stype_of


def _needs_csr(name):
    def compute(xp, p, *arrays):
        raise GpundaError(f"Operator {name}: the graph must be a csr NDArray (MXNet has no "
                          f"kernel for dense storage)")
    return compute


def _edge_keys(xp, g):
    """Sorted row * ncols + col keys of the stored entries (canonical csr)."""
    rows = xp.repeat(xp.arange(g.shape[0], dtype=INDEX), xp.diff(g.indptr).astype(INDEX))
    return rows * g.shape[1] + g.indices.astype(INDEX)


def _edge_id(xp, sp, p, g, u, v):
    if not isinstance(g, CSRData) or stype_of(u) != "default" or stype_of(v) != "default":
        return NotImplemented
    if u.ndim != 1 or tuple(u.shape) != tuple(v.shape):
        raise GpundaError(f"Operator _contrib_edge_id: u and v must be 1-D of one length, got "
                          f"shapes {tuple(u.shape)} and {tuple(v.shape)}")
    ui, vi = u.astype(INDEX), v.astype(INDEX)
    bad = (ui < 0) | (ui >= g.shape[0]) | (vi < 0) | (vi >= g.shape[1])
    if bool(bad.any()):
        raise GpundaError(f"Operator _contrib_edge_id: a vertex id is outside the graph of "
                          f"shape {g.shape}")
    keys = _edge_keys(xp, g)
    q = ui * g.shape[1] + vi
    pos = xp.minimum(xp.searchsorted(keys, q), max(keys.shape[0] - 1, 0))
    found = (keys[pos] == q) if keys.shape[0] else xp.zeros(q.shape, bool)
    vals = g.data[pos] if keys.shape[0] else xp.zeros(q.shape, g.dtype)
    return xp.where(found, vals, g.dtype.type(-1)).astype(g.dtype)


register(OpDef(
    "_contrib_edge_id", _needs_csr("_contrib_edge_id"), inputs=("data", "u", "v"),
    nondiff=True, save=(), family="dgl", sparse={("csr", "default", "default"): _edge_id},
    doc="Edge ids data[u[i], v[i]] of a csr graph; -1 where there is no edge."))


def _require_int64(name, g):
    if g.dtype != np.int64:
        raise GpundaError(f"Operator {name}: the graph's edge ids must be int64, got "
                          f"{g.dtype.name}")


def _adjacency(xp, sp, p, g):
    if not isinstance(g, CSRData):
        return NotImplemented
    _require_int64("_contrib_dgl_adjacency", g)
    return CSRData(xp.ones(g.data.shape, np.float32), g.indices.copy(), g.indptr.copy(),
                   g.shape)


register(OpDef(
    "_contrib_dgl_adjacency", _needs_csr("_contrib_dgl_adjacency"), nondiff=True, save=(),
    family="dgl", sparse={("csr",): _adjacency},
    doc="The csr structure of an edge-id graph with float32 ones as values."))


def _induced(xp, g, verts):
    """Renumbered and original-id csr subgraphs on the sorted vertex ids ``verts``."""
    n = int(verts.shape[0])
    pos = xp.full((g.shape[1],), -1, INDEX)        # new index of every vertex, -1 outside
    pos[verts] = xp.arange(n, dtype=INDEX)
    counts = xp.diff(g.indptr)[verts].astype(INDEX)
    starts = g.indptr[verts].astype(INDEX)
    total = int(counts.sum())
    offs = xp.zeros(n + 1, INDEX)
    offs[1:] = xp.cumsum(counts)
    k = xp.arange(total, dtype=INDEX)
    row = xp.searchsorted(offs[1:], k, side="right")
    src = starts[row] + (k - offs[row])
    cols = pos[g.indices[src].astype(INDEX)]
    keep = cols >= 0
    row, cols, ids = row[keep], cols[keep], g.data[src][keep]
    indptr = xp.zeros(n + 1, INDEX)
    indptr[1:] = xp.cumsum(xp.bincount(row, minlength=n)[:n])
    new_ids = xp.arange(int(cols.shape[0]), dtype=g.dtype)
    return (CSRData(new_ids, cols, indptr, (n, n)),
            CSRData(ids.copy(), cols.copy(), indptr.copy(), (n, n)))


def _subgraph(xp, sp, p, g, *vsets):
    if not isinstance(g, CSRData) or any(stype_of(v) != "default" for v in vsets):
        return NotImplemented
    _require_int64("_contrib_dgl_subgraph", g)
    if g.shape[0] != g.shape[1]:
        raise GpundaError(f"Operator _contrib_dgl_subgraph: the graph must be square, got "
                          f"shape {g.shape}")
    new, mapped = [], []
    for i, v in enumerate(vsets):
        if v.dtype != np.int64 or v.ndim != 1:
            raise GpundaError(f"Operator _contrib_dgl_subgraph: varray{i} must be a 1-D int64 "
                              f"array of vertex ids, got {v.dtype.name} of shape "
                              f"{tuple(v.shape)}")
        if v.shape[0] > 1 and not bool((v[1:] >= v[:-1]).all()):
            raise GpundaError(f"Operator _contrib_dgl_subgraph: varray{i}: the input vertex "
                              f"list has to be sorted")
        if v.shape[0] and (int(v.min()) < 0 or int(v.max()) >= g.shape[0]):
            raise GpundaError(f"Operator _contrib_dgl_subgraph: varray{i} holds a vertex "
                              f"outside [0, {g.shape[0]})")
        a, b = _induced(xp, g, v)
        new.append(a)
        mapped.append(b)
    outs = new + (mapped if p.return_mapping else [])
    return outs[0] if len(outs) == 1 else tuple(outs)


def _n_subgraph_outputs(p):
    return (p.num_args - 1) * (2 if p.return_mapping else 1)


register(OpDef(
    "_contrib_dgl_subgraph", _needs_csr("_contrib_dgl_subgraph"),
    inputs=lambda p: ("graph",) + tuple(f"varray{i}" for i in range(p.num_args - 1)),
    params=[Param("num_args", "int", doc="the graph and the vertex sets"),
            Param("return_mapping", "bool", doc="also return the original edge ids")],
    key_var_num_args="num_args", num_outputs=_n_subgraph_outputs, nondiff=True, save=(),
    family="dgl", sparse={"*": _subgraph},
    doc="Induced csr subgraphs on sorted int64 vertex sets, edges renumbered from 0."))
