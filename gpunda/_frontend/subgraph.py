"""Graph partitioning: subgraph backends, properties, selectors and the pass that groups
selected nodes into subgraph nodes (MXNet 1.9.1's ``src/operator/subgraph/``).

NOTE [Subgraph partitioning]
A *backend* is a name with an ordered list of *subgraph properties*; gpunda registers
MXNet's two test backends, ``default`` and ``default_v2``, each with one property that
groups the nodes whose operator is in its ``op_names`` attribute and runs each group as a
``_CachedOp`` node (``ops/control_flow/subgraph.py``) holding the group as its subgraph.

``build_subgraph(sym, prop)`` is MXNet's BuildSubgraph pass, on a copy of the graph:

1. Nodes are numbered in DFS post-order (``topo_order``) and every entry *slot* (an input
   of a node, or a graph output) gets the order in which a DFS from the outputs completes
   it; inputs and outputs of a subgraph are sorted by that order.
2. Each unlabelled node the property's selector accepts seeds a group: a breadth-first
   walk along inputs and outputs takes every neighbour the selector accepts. When a node
   outside the group both feeds it and consumes it, directly or through other outside
   nodes, the group would form a cycle with it: the group node with the largest number on
   that path is excluded and the walk restarts, until no cycle is left (or the seed stays
   alone when excluding changes nothing).
3. Each group becomes one node: its input slots are cut and fed by new variables named
   after the entry they read (``<output name><k>``, one per use, or one per entry with
   ``dedup_subgraph``), its output slots read the new node's outputs in slot order (equal
   entries share one output when the property's ``dedup_subgraph`` flag is set).

The executor partitions when ``MXNET_SUBGRAPH_BACKEND`` names a backend (``NONE``: off),
with the op names set by ``MXSetSubgraphPropertyOpNames``; ``Symbol.optimize_for``,
``Symbol.get_backend_symbol`` and Gluon's ``hybridize(backend=...)`` use the op names a
property holds (``MXSetSubgraphPropertyOpNamesV2``). Unlike MXNet, which logs an error
and returns the graph unchanged, ``optimize_for`` with a backend name that is not
registered raises GpundaError.
"""
from __future__ import annotations

from collections import deque

from gpunda.base import GpundaError
from gpunda.symbol.symbol import Symbol, _Node, topo_order

__all__ = ["SubgraphSelector", "ContainOpSelector", "SubgraphProperty",
           "DefaultSubgraphProperty", "SubgraphBackend", "register_backend", "get_backend",
           "backend_names", "build_subgraph", "build_by_op_names", "set_op_names",
           "remove_op_names", "set_property_op_names", "remove_property_op_names",
           "partition_for_executor", "optimize_for", "backend_symbol"]


# -- selectors and properties -------------------------------------------------------
class SubgraphSelector:
    """Decides which nodes form a subgraph (MXNet's SubgraphSelectorV2). ``select``: may
    ``node`` seed one; ``select_input``/``select_output``: may the walk go from ``cur`` to
    its producer/consumer ``node``; ``filter``: the final members among the candidates
    (sorted by node number); ``reset``: called before the walk restarts after a cycle."""

    def select(self, node):
        return False

    def select_input(self, cur, node):
        return False

    def select_output(self, cur, node):
        return False

    def filter(self, candidates):
        return list(candidates)

    def reset(self):
        pass


class ContainOpSelector(SubgraphSelector):
    """Takes every op node whose operator name is in ``op_names``, along inputs and outputs."""

    def __init__(self, op_names):
        self.op_names = op_names

    def _ok(self, node):
        return node.op is not None and node.op.name in self.op_names

    def select(self, node):
        return self._ok(node)

    def select_input(self, cur, node):
        return self._ok(node)

    def select_output(self, cur, node):
        return self._ok(node)


class SubgraphProperty:
    """One partitioning rule of a backend: a selector per seed, and the node that replaces
    each group. ``attrs`` holds settings by name (``op_names``; ``disable``: skip it)."""

    def __init__(self):
        self.attrs = {}
        self.dedup_subgraph = False

    def create_selector(self):
        raise NotImplementedError

    def create_subgraph_node(self, sub, selector, subgraph_id):
        """The node that runs Symbol ``sub`` (inputs are connected by the pass), or None
        to leave the group as it is."""
        raise NotImplementedError

    def pre_partition(self, options):
        """Before ``optimize_for`` partitions: its string ``options``."""
        self.dedup_subgraph = options.get("dedup_subgraph") == "True"

    def post_partition(self, sym):
        """After ``optimize_for`` partitioned ``sym``."""


class DefaultSubgraphProperty(SubgraphProperty):
    """Groups nodes whose operator is in ``attrs['op_names']``; each group runs as a
    ``_CachedOp`` node named ``_CachedOp<k>`` (MXNet's default/default_v2 property)."""

    def __init__(self, backend):
        super().__init__()
        self.backend = backend

    def create_selector(self):
        names = self.attrs.get("op_names")
        if names is None:
            raise GpundaError(f"subgraph backend {self.backend!r}: its property has no op_names "
                              f"attribute; set it with _LIB.MXSetSubgraphPropertyOpNamesV2 "
                              f"(MXNet fails the same way)")
        return ContainOpSelector(names)

    def create_subgraph_node(self, sub, selector, subgraph_id):
        from gpunda.ops.registry import get_op
        from gpunda.ops.control_flow.loops import with_subgraphs
        op = get_op("_CachedOp")
        p = with_subgraphs(op.parse_params({"static_alloc": True}), [sub])
        return _Node(op, f"_CachedOp{subgraph_id}", {}, [], p)


class SubgraphBackend:
    """A backend name and its properties, applied in order."""

    def __init__(self, name):
        self.name = name
        self.properties = []

    def __repr__(self):
        return f"<SubgraphBackend {self.name} ({len(self.properties)} properties)>"


_backends = {}
_v1_op_names = {}    # MXSetSubgraphPropertyOpNames: backend -> op names (the executor's)


def register_backend(name):
    """The backend registered as ``name`` (created on first registration)."""
    b = _backends.get(name)
    if b is None:
        b = _backends[name] = SubgraphBackend(name)
    return b


def backend_names():
    return sorted(_backends)


def get_backend(name, where="subgraph"):
    b = _backends.get(name)
    if b is None:
        raise GpundaError(f"{where}: subgraph backend {name!r} is not registered; gpunda "
                          f"has {backend_names()}")
    return b


for _name in ("default", "default_v2"):
    register_backend(_name).properties.append(DefaultSubgraphProperty(_name))


# -- the pass -------------------------------------------------------------------------
def _entry_name(e):
    node, i = e
    return node.name if node.op is None else node.output_names()[i]


class _Graph:
    """The working state of one pass over a copy of a graph.

    A slot is ``(node, j)``, input ``j`` of ``node``, or ``(None, k)``, graph output ``k``.
    """

    def __init__(self, sym):
        self.heads = list(sym._rebuild({})._outputs)
        self.order = topo_order(self.heads)
        self.nid = {id(n): i for i, n in enumerate(self.order)}
        self.labels = [-1] * len(self.order)
        # consumers[i]: id(consumer) -> [consumer, [input positions]] (MXNet's outputs map)
        self.consumers = [{} for _ in self.order]
        for n in self.order:
            for j, (c, _) in enumerate(n.inputs):
                self.consumers[self.nid[id(c)]].setdefault(id(n), [n, []])[1].append(j)
        self.slot_order = self._sort_slots()

    @staticmethod
    def key(slot):
        node, j = slot
        return ("head", j) if node is None else (id(node), j)

    def get(self, slot):
        node, j = slot
        return self.heads[j] if node is None else node.inputs[j]

    def put(self, slot, entry):
        node, j = slot
        if node is None:
            self.heads[j] = entry
        else:
            node.inputs[j] = entry

    def _sort_slots(self):
        """Slot key -> the step at which a DFS from the outputs completes that entry."""
        order, visited = {}, set()
        for k, (root, _) in enumerate(self.heads):
            if id(root) in visited:
                order.setdefault(("head", k), len(order))
                continue
            visited.add(id(root))
            stack = [[root, 0, ("head", k)]]
            while stack:
                top = stack[-1]
                node = top[0]
                if top[1] == len(node.inputs):
                    order.setdefault(top[2], len(order))
                    stack.pop()
                    continue
                j = top[1]
                top[1] += 1
                src = node.inputs[j][0]
                if id(src) in visited:
                    order.setdefault((id(node), j), len(order))
                else:
                    visited.add(id(src))
                    stack.append([src, 0, (id(node), j)])
        return order

    def sorted_slots(self, slots):
        return sorted(slots, key=lambda s: self.slot_order[self.key(s)])

    # -- finding groups ----------------------------------------------------------------
    def _is_ancestor(self, anc, desc, members):
        """Does ``anc`` reach ``desc`` without crossing the group (MXNet bounds the walk
        by the node count)?"""
        if anc == desc:
            return True
        stack, count = [desc], 0
        while stack and count < len(self.order):
            count += 1
            top = stack.pop()
            if top == anc:
                return True
            for c, _ in self.order[top].inputs:
                ci = self.nid[id(c)]
                if ci not in members:
                    stack.append(ci)
        return False

    def _label(self, selector, label, seed, excluded, members):
        """Label the group grown from ``seed``; False (labels undone, a node added to
        ``excluded``) when it would form a cycle with outside nodes."""
        labels, order, nid = self.labels, self.order, self.nid
        labels[seed] = label
        queue = deque([seed])
        # outside node -> (group nodes reading it, group nodes it reads)
        edges = {}
        while queue:
            cur = queue.popleft()
            members.append(cur)
            node = order[cur]
            for c, _ in node.inputs:
                ci = nid[id(c)]
                if labels[ci] == -1 and ci not in excluded and selector.select_input(node, c):
                    labels[ci] = label
                    queue.append(ci)
                elif labels[ci] == -1:
                    edges.setdefault(ci, ([], []))[0].append(cur)
            for consumer, _ in self.consumers[cur].values():
                ci = nid[id(consumer)]
                if labels[ci] == -1 and ci not in excluded and \
                        selector.select_output(node, consumer):
                    labels[ci] = label
                    queue.append(ci)
                elif labels[ci] == -1:
                    edges.setdefault(ci, ([], []))[1].append(cur)
        outside = sorted(edges)
        for readers, read in edges.values():
            readers.sort()
            read.sort()
        group = set(members)
        excluded_id = -1
        for a, i in enumerate(outside):
            readers, read = edges[i]
            if readers and read:        # i reads the group and feeds it
                excluded_id = max(excluded_id, readers[-1], read[-1])
            elif read:
                # i reads the group: does it reach a later outside node that feeds it?
                for j in outside[a + 1:]:
                    if edges[j][0] and self._is_ancestor(i, j, group):
                        excluded_id = max(excluded_id, read[-1], edges[j][0][-1])
        if excluded_id != -1:
            excluded.add(excluded_id)
            for m in members:
                labels[m] = -1
            members.clear()
            return False
        members.sort()
        return True

    def _preselect(self, selector, label, seed):
        excluded, members = set(), []
        n_excluded, count, ok = 0, 0, False
        while not ok and count < len(self.order) ** 2:
            ok = self._label(selector, label, seed, excluded, members)
            if not ok:
                if len(excluded) == n_excluded:
                    break       # excluding more changes nothing
                n_excluded = len(excluded)
                selector.reset()
            count += 1
        if not ok:              # the seed alone
            self.labels[seed] = label
            members = [seed]
        return members

    def find_groups(self, prop):
        groups = []
        for i, node in enumerate(self.order):
            selector = prop.create_selector()
            if self.labels[i] != -1 or not selector.select(node):
                continue
            cand = self._preselect(selector, len(groups), i)
            kept = [self.nid[id(n)] for n in selector.filter([self.order[m] for m in cand])]
            keep = set(kept)
            if not keep <= set(cand):
                raise GpundaError(f"subgraph selector {type(selector).__name__}: filter "
                                  f"returned nodes that were not candidates")
            for m in cand:
                if m not in keep:
                    self.labels[m] = -1
            if kept:
                groups.append((sorted(keep), selector))
        return groups

    # -- replacing a group -------------------------------------------------------------
    def _input_slots(self, group, label):
        slots = []
        for m in group:
            node = self.order[m]
            for j, (c, _) in enumerate(node.inputs):
                ci = self.nid.get(id(c))
                if ci is None or self.labels[ci] != label:   # None: an earlier group's node
                    slots.append((node, j))
        return self.sorted_slots(slots)

    def _output_slots(self, group, label):
        slots = []
        for m in group:
            for consumer, positions in self.consumers[m].values():
                ci = self.nid.get(id(consumer))
                if ci is None or self.labels[ci] != label:
                    slots.extend((consumer, j) for j in positions)
        for k, (node, _) in enumerate(self.heads):
            ci = self.nid.get(id(node))
            if ci is not None and self.labels[ci] == label:
                slots.append((None, k))
        return self.sorted_slots(slots)

    def replace(self, prop, group, selector, subgraph_id, dedup):
        label = self.labels[group[0]]
        in_slots = self._input_slots(group, label)
        # cut the inputs: each slot reads a new variable named after the entry it read
        orig, unique_orig, count, shared = [], [], {}, {}
        for slot in in_slots:
            e = self.get(slot)
            orig.append(e)
            name = _entry_name(e)
            if name not in count:
                count[name] = 0
                unique_orig.append(e)
                shared[name] = (_Node(None, f"{name}0", {}, [], None), 0)
            else:
                count[name] += 1
            self.put(slot, shared[name] if dedup else
                     (_Node(None, f"{name}{count[name]}", {}, [], None), 0))
        out_slots = self._output_slots(group, label)
        outs = [self.get(s) for s in out_slots]
        if dedup:       # equal entries are neighbours once sorted
            outs = [e for k, e in enumerate(outs)
                    if k == 0 or not (e[0] is outs[k - 1][0] and e[1] == outs[k - 1][1])]
        node = prop.create_subgraph_node(Symbol(outs), selector, subgraph_id)
        if node is None:        # the property declined: put the inputs back
            for slot, e in zip(in_slots, orig):
                self.put(slot, e)
            return
        # the outputs are connected as the property's own flag says, which only
        # optimize_for sets (pre_partition) and which stays set after it, as in MXNet:
        # a later pass without dedup then points equal entries at one output
        idx, prev = 0, None
        for k, slot in enumerate(out_slots):
            if prop.dedup_subgraph:
                e = self.get(slot)
                if k and not (e[0] is prev[0] and e[1] == prev[1]):
                    idx += 1
                prev = e
                self.put(slot, (node, idx))
            else:
                self.put(slot, (node, k))
        node.inputs = list(unique_orig if dedup else orig)
        members = [id(self.order[m]) for m in group]
        for i, (src, _) in enumerate(node.inputs):
            # as MXNet: the new slot sorts where the i-th cut slot did
            self.slot_order.setdefault((id(node), i), self.slot_order[self.key(in_slots[i])])
            si = self.nid.get(id(src))
            if si is not None:
                cons = self.consumers[si]
                for m in members:
                    cons.pop(m, None)
                cons.setdefault(id(node), [node, []])[1].append(i)


def build_subgraph(sym, prop, dedup=False):
    """``sym`` with every group ``prop`` selects replaced by the node it makes (a new
    Symbol; ``sym`` is unchanged). NOTE [Subgraph partitioning]."""
    g = _Graph(sym)
    for k, (group, selector) in enumerate(g.find_groups(prop)):
        g.replace(prop, group, selector, k, dedup)
    return Symbol(g.heads)


# -- what the C API and the front ends call -------------------------------------------------
def _copy(sym):
    return sym._rebuild({})


def build_by_op_names(sym, backend, op_names):
    """MXBuildSubgraphByOpNames: each property of ``backend`` set to ``op_names`` (kept
    after the call, as in MXNet) and applied; no op names: a copy of ``sym``."""
    op_names = set(op_names)
    if not op_names:
        return _copy(sym)
    for prop in get_backend(backend, "MXBuildSubgraphByOpNames").properties:
        prop.attrs["op_names"] = op_names
        sym = build_subgraph(sym, prop)
    return sym


def set_op_names(backend, op_names):
    """MXSetSubgraphPropertyOpNames: the op names the executor's partitioning uses."""
    _v1_op_names[backend] = set(op_names)


def remove_op_names(backend):
    _v1_op_names.pop(backend, None)


def set_property_op_names(backend, op_names):
    """MXSetSubgraphPropertyOpNamesV2: the op names every property of ``backend`` holds."""
    for prop in get_backend(backend, "MXSetSubgraphPropertyOpNamesV2").properties:
        prop.attrs["op_names"] = set(op_names)


def remove_property_op_names(backend):
    for prop in get_backend(backend, "MXRemoveSubgraphPropertyOpNamesV2").properties:
        prop.attrs.pop("op_names", None)


def _enabled(prop):
    return not prop.attrs.get("disable", False)


def partition_for_executor(sym, backend):
    """The graph an executor runs under ``MXNET_SUBGRAPH_BACKEND=backend``: every enabled
    property, holding the op names ``MXSetSubgraphPropertyOpNames`` gave (none: nothing is
    grouped)."""
    names = _v1_op_names.get(backend, set())
    for prop in get_backend(backend, "MXNET_SUBGRAPH_BACKEND").properties:
        if _enabled(prop):
            prop.attrs["op_names"] = names
            sym = build_subgraph(sym, prop)
    return sym


def optimize_for(sym, backend, options):
    """``Symbol.optimize_for``'s partitioning: each property's ``pre_partition(options)``,
    the pass (``dedup_subgraph='True'`` shares one variable and one output per entry),
    then ``post_partition``."""
    for prop in get_backend(backend, "optimize_for").properties:
        prop.pre_partition(options)
        sym = build_subgraph(sym, prop, dedup=options.get("dedup_subgraph") == "True")
        prop.post_partition(sym)
    return sym


def backend_symbol(sym, backend):
    """``Symbol.get_backend_symbol`` (MXGenBackendSubgraph): every enabled property."""
    for prop in get_backend(backend, "get_backend_symbol").properties:
        if _enabled(prop):
            sym = build_subgraph(sym, prop)
    return sym
