"""MXNet 1.x's DGL neighbour samplers and ``dgl_graph_compact`` (src/operator/contrib/dgl_graph.cc).

``_contrib_dgl_csr_neighbor_uniform_sample(graph, *seeds)`` walks each seed set breadth
first for ``num_hops`` hops, keeping at most ``num_neighbor`` in-neighbours (row entries)
per vertex, drawn without replacement, until ``max_num_vertices`` vertices are taken. Per
seed set it returns: the sorted vertex ids (length ``max_num_vertices + 1``, the last slot
holding the count), the sampled edges as a ``(max_num_vertices, N)`` csr whose row k is
vertex ids[k] (columns are original vertex ids, values the edge ids) and the hop at which
each vertex was reached. The non-uniform sampler draws neighbours with the weights of a
``probability`` vector over vertices and also returns each vertex's probability.
``_contrib_dgl_graph_compact`` renumbers such a csr's columns into the sampled ids, giving a
square ``graph_size`` csr with edges numbered 0, 1, ...

The walks are host loops (one vertex at a time, as MXNet's); the draws come from gpunda's
CPU generator, so ``mx.random.seed`` makes them repeatable (not MXNet's draws). Unused slots
of the outputs are 0 (MXNet leaves them unwritten).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.contrib.dgl_graph import _needs_csr
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.sparse.ops import CSRData, stype_of


def _host(a):
    return np.asarray(a.get() if hasattr(a, "get") else a)


def _rng():
    from gpunda import random as _random
    from gpunda.context import cpu
    return np.random.RandomState(int(_random._generator(cpu()).randint(0, 2 ** 31 - 1)))


def _pick(rng, cols, eids, k, weights):
    """At most k (column, edge id) pairs of one row, drawn without replacement."""
    if cols.shape[0] <= k:
        return cols, eids
    if weights is None:
        take = np.sort(rng.choice(cols.shape[0], k, replace=False))
    else:
        w = weights[cols].astype(np.float64)
        total = w.sum()
        if not total > 0:
            raise GpundaError("Operator _contrib_dgl_csr_neighbor_non_uniform_sample: the "
                              "neighbours of a vertex all have probability 0")
        take = np.sort(rng.choice(cols.shape[0], k, replace=False, p=w / total))
    return cols[take], eids[take]


def _sample(name, g, seeds, p, weights, rng):
    """(ids, sub csr, layers) of one seed set; see the module docstring."""
    indptr, cols, eids = _host(g.indptr), _host(g.indices), _host(g.data)
    seeds = _host(seeds).astype(np.int64).reshape(-1)
    cap = p.max_num_vertices
    if seeds.shape[0] > cap:
        raise GpundaError(f"Operator {name}: {seeds.shape[0]} seeds exceed "
                          f"max_num_vertices={cap}")
    if seeds.shape[0] and (seeds.min() < 0 or seeds.max() >= g.shape[0]):
        raise GpundaError(f"Operator {name}: a seed vertex is outside [0, {g.shape[0]})")
    layer = {}
    queue = []
    for s in seeds.tolist():
        if s not in layer:
            layer[s] = 0
            queue.append(s)
    picked = {}
    head = 0
    while head < len(queue) and len(layer) < cap:
        v = queue[head]
        head += 1
        if layer[v] >= p.num_hops:
            continue
        lo, hi = int(indptr[v]), int(indptr[v + 1])
        nc, ne = _pick(rng, cols[lo:hi], eids[lo:hi], p.num_neighbor, weights)
        picked[v] = (nc, ne)
        for u in nc.tolist():
            if len(layer) >= cap:
                break
            if u not in layer:
                layer[u] = layer[v] + 1
                queue.append(u)
    verts = sorted(layer)
    n = len(verts)
    ids = np.zeros(cap + 1, np.int64)
    ids[:n] = verts
    ids[cap] = n
    layers = np.zeros(cap, np.int64)
    layers[:n] = [layer[v] for v in verts]
    rows = [picked.get(v, (cols[:0], eids[:0])) for v in verts]
    counts = np.array([r[0].shape[0] for r in rows] + [0] * (cap - n), np.int64)
    sub_indptr = np.zeros(cap + 1, np.int64)
    sub_indptr[1:] = np.cumsum(counts)
    sub_cols = np.concatenate([r[0] for r in rows]).astype(np.int64) if rows else \
        np.zeros(0, np.int64)
    sub_eids = np.concatenate([r[1] for r in rows]).astype(g.dtype) if rows else \
        np.zeros(0, g.dtype)
    return ids, CSRData(sub_eids, sub_cols, sub_indptr, (cap, g.shape[1])), layers, verts


def _check_graph(name, g, p):
    if g.shape[0] != g.shape[1]:
        raise GpundaError(f"Operator {name}: the graph must be square, got shape {g.shape}")
    if g.dtype != np.int64:
        raise GpundaError(f"Operator {name}: the graph's edge ids must be int64, got "
                          f"{g.dtype.name}")
    if p.num_hops < 0 or p.num_neighbor < 0 or p.max_num_vertices < 1:
        raise GpundaError(f"Operator {name}: num_hops={p.num_hops}, num_neighbor="
                          f"{p.num_neighbor} and max_num_vertices={p.max_num_vertices} must "
                          f"be non-negative (max_num_vertices positive)")


def _to_xp(xp, out):
    if isinstance(out, CSRData):
        return CSRData(xp.asarray(out.data), xp.asarray(out.indices), xp.asarray(out.indptr),
                       out.shape)
    return xp.asarray(out)


def _uniform(xp, sp, p, g, *seed_sets):
    name = "_contrib_dgl_csr_neighbor_uniform_sample"
    if not isinstance(g, CSRData) or any(stype_of(s) != "default" for s in seed_sets):
        return NotImplemented
    _check_graph(name, g, p)
    rng = _rng()
    res = [_sample(name, g, s, p, None, rng)[:3] for s in seed_sets]
    return tuple(_to_xp(xp, r[k]) for k in range(3) for r in res)


def _non_uniform(xp, sp, p, g, prob, *seed_sets):
    name = "_contrib_dgl_csr_neighbor_non_uniform_sample"
    if not isinstance(g, CSRData) or any(stype_of(s) != "default" for s in (prob,) + seed_sets):
        return NotImplemented
    _check_graph(name, g, p)
    w = _host(prob).astype(np.float32).reshape(-1)
    if w.shape[0] != g.shape[0]:
        raise GpundaError(f"Operator {name}: probability has {w.shape[0]} entries for a graph "
                          f"of {g.shape[0]} vertices")
    rng = _rng()
    res = []
    for s in seed_sets:
        ids, sub, layers, verts = _sample(name, g, s, p, w, rng)
        sub_prob = np.zeros(p.max_num_vertices, np.float32)
        sub_prob[:len(verts)] = w[verts]
        res.append((ids, sub, sub_prob, layers))
    return tuple(_to_xp(xp, r[k]) for k in range(4) for r in res)


_SAMPLE_PARAMS = [Param("num_args", "int", doc="the graph (and probability) and the seed sets"),
                  Param("num_hops", "int", 1, "hops to walk from the seeds"),
                  Param("num_neighbor", "int", 2, "most neighbours kept per vertex"),
                  Param("max_num_vertices", "int", 100, "most vertices per subgraph")]


def _n_sets(p, fixed):
    if p.num_args <= fixed:
        raise GpundaError(f"num_args={p.num_args} must be at least {fixed + 1}")
    return p.num_args - fixed


def _sample_shapes(fixed, per):
    def infer(p, s):
        n = _n_sets(p, fixed)
        g = s[0]
        cap = p.max_num_vertices
        sets = [[(cap + 1,)] * n, [(cap, g[1] if g else -1)] * n]
        if per == 4:
            sets.append([(cap,)] * n)
        sets.append([(cap,)] * n)
        return list(s), [x for group in sets for x in group]
    return infer


register(OpDef(
    "_contrib_dgl_csr_neighbor_uniform_sample",
    _needs_csr("_contrib_dgl_csr_neighbor_uniform_sample"),
    inputs=lambda p: ("csr_matrix",) + tuple(f"seed_arrays{i}" for i in range(
        _n_sets(p, 1))),
    params=_SAMPLE_PARAMS, key_var_num_args="num_args",
    num_outputs=lambda p: 3 * _n_sets(p, 1), nondiff=True, save=(), random=True,
    family="dgl", sparse={"*": _uniform}, infer_shape=_sample_shapes(1, 3),
    capture="host breadth-first walk",
    doc="Uniform neighbour sampling of csr graphs from seed vertex sets: per set the "
        "vertex ids (+ count), the sampled edges (csr) and each vertex's hop."))
register(OpDef(
    "_contrib_dgl_csr_neighbor_non_uniform_sample",
    _needs_csr("_contrib_dgl_csr_neighbor_non_uniform_sample"),
    inputs=lambda p: ("csr_matrix", "probability") + tuple(
        f"seed_arrays{i}" for i in range(_n_sets(p, 2))),
    params=_SAMPLE_PARAMS, key_var_num_args="num_args",
    num_outputs=lambda p: 4 * _n_sets(p, 2), nondiff=True, save=(), random=True,
    family="dgl", sparse={"*": _non_uniform}, infer_shape=_sample_shapes(2, 4),
    capture="host breadth-first walk",
    doc="Neighbour sampling weighted by a per-vertex probability: per set the vertex ids "
        "(+ count), the sampled edges (csr), the vertices' probabilities and hops."))


def _compact(xp, sp, p, *arrays):
    name = "_contrib_dgl_graph_compact"
    n = len(arrays) // 2
    graphs, vids = arrays[:n], arrays[n:]
    if any(not isinstance(g, CSRData) for g in graphs) or any(stype_of(v) != "default"
                                                              for v in vids):
        return NotImplemented
    sizes = tuple(p.graph_sizes)
    if len(sizes) != n:
        raise GpundaError(f"Operator {name}: graph_sizes has {len(sizes)} entries for {n} "
                          f"graphs")
    new, mapped = [], []
    for k, (g, v, size) in enumerate(zip(graphs, vids, sizes)):
        ind, cols, eids = _host(g.indptr), _host(g.indices), _host(g.data)
        ids = _host(v).astype(np.int64).reshape(-1)
        if ids.shape[0] != ind.shape[0] or int(ids[-1]) != size or size > g.shape[0]:
            raise GpundaError(f"Operator {name}: graph {k}: the vertex ids (length "
                              f"{ids.shape[0]}, count {int(ids[-1])}) must come from the "
                              f"sampler of this graph and graph_sizes[{k}]={size}")
        pos = {int(u): i for i, u in enumerate(ids[:size])}
        try:
            new_cols = np.array([pos[int(c)] for c in cols], np.int64)
        except KeyError as e:
            raise GpundaError(f"Operator {name}: graph {k} has an edge to vertex {e} which "
                              f"is not among its sampled ids") from None
        indptr = ind[:size + 1].astype(np.int64)
        shape = (size, size)
        new.append(_to_xp(xp, CSRData(np.arange(cols.shape[0], dtype=np.int64), new_cols,
                                      indptr, shape)))
        mapped.append(_to_xp(xp, CSRData(eids.astype(np.int64), new_cols.copy(),
                                         indptr.copy(), shape)))
    outs = new + (mapped if p.return_mapping else [])
    return outs[0] if len(outs) == 1 else tuple(outs)


register(OpDef(
    "_contrib_dgl_graph_compact", _needs_csr("_contrib_dgl_graph_compact"),
    inputs=lambda p: tuple(f"graph_data{i}" for i in range(p.num_args)),
    params=[Param("num_args", "int", doc="the graphs, then their vertex ids"),
            Param("return_mapping", "bool", doc="also return the graphs holding the "
                                                "parent's edge ids"),
            Param("graph_sizes", "shape", doc="vertices of each graph")],
    key_var_num_args="num_args",
    num_outputs=lambda p: (p.num_args // 2) * (2 if p.return_mapping else 1), nondiff=True,
    save=(), family="dgl", sparse={"*": _compact},
    doc="Square csr graphs of the sampled vertices (columns renumbered into the sampler's "
        "ids, edges numbered 0, 1, ...); with return_mapping also the parent's edge ids."))
