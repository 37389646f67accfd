"""Shape and dtype inference over a Symbol graph (MXNet's InferShape / InferType passes).

Shapes are kept internally as None (rank unknown) or tuples whose unknown
dimensions are -1, whatever the user-facing convention (``to_internal`` /
``to_public`` translate MXNet's legacy 0-means-unknown and NumPy-shape
-1-means-unknown forms). The passes alternate forward and backward over the
nodes until nothing changes, so a shape learned downstream flows back up
through ops with partial rules (``shape_rules.py``). Ops without a rule get
their outputs from ``OpDef.infer_shape`` or, failing that, by running their
compute on zero-stride dummy inputs once every input shape is known. Two known
dimensions that disagree raise GpundaError naming the node.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, np_dtype
from gpunda.symbol.shape_rules import known, merge, rule_for

__all__ = ["infer_graph", "node_types", "to_internal", "to_public", "parse_shape_attr",
           "open_shapes"]

_MAX_PASSES = 8


def to_internal(shape, np_shape):
    """A user-given shape in the internal form (legacy: () unknown, 0 unknown dim)."""
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(d) for d in shape)
    if np_shape:
        return shape
    if not shape:
        return None
    return tuple(-1 if d == 0 else d for d in shape)


def to_public(shape, np_shape):
    """An internal shape as MXNet reports it (legacy: () and 0, NumPy shape: None and -1)."""
    if np_shape:
        return shape
    if shape is None:
        return ()
    return tuple(0 if d < 0 else d for d in shape)


def parse_shape_attr(text):
    """The tuple written in a ``__shape__`` attribute, or None if it is not one."""
    import ast
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if isinstance(v, int):
        v = (v,)
    if not isinstance(v, (tuple, list)):
        return None
    return tuple(int(d) for d in v)


def _var_dtype(n, given):
    from gpunda.symbol.symbol import CODE_TO_DTYPE
    t = given.get(n.name)
    if t is None and "__dtype__" in n.attrs:
        try:
            t = np_dtype(CODE_TO_DTYPE[int(n.attrs["__dtype__"])])
        except (KeyError, ValueError):
            t = None
    return t


def _dummy(shape, dtype):
    # zero strides: every element aliases one zero, so big shapes cost nothing
    return np.broadcast_to(np.zeros((), dtype), shape)


def _dummy_eye(shape, dtype):
    """Identity matrices over the last two axes (ones when they are not square)."""
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return np.broadcast_to(np.eye(shape[-1], dtype=dtype), shape).copy()
    return np.ones(shape, dtype)


def _run_dummy(node, in_shapes, in_types):
    from gpunda._engine import autograd as ag
    from gpunda.context import cpu
    op, p = node.op, node.p
    prev = ag.set_training(False)
    try:
        with np.errstate(all="ignore"):
            first = None
            # identity matrices pass value checks zeros fail (potrf); ones last, for the
            # samplers that refuse zero parameters (negative_binomial's k > 0)
            makers = (_dummy, lambda s, t: np.zeros(s, t), _dummy_eye, lambda s, t: np.ones(s, t))
            for make in makers:
                arrays = [make(s, t) for s, t in zip(in_shapes, in_types)]
                try:
                    if op.wants_ctx:
                        r = op.compute(np, p, *arrays, ctx=cpu())
                    else:
                        r = op.compute(np, p, *arrays)
                    break
                except GpundaError as e:
                    # a check on the values (potrf wants a positive definite matrix) fails
                    # on zeros; identity matrices pass it. Shape errors fail every try.
                    first = first or e
                    if make is makers[-1]:
                        raise first from None
                # (LinAlgError: a ValueError from NumPy 2 on, a bare Exception before)
                except (ValueError, TypeError, np.linalg.LinAlgError) as e:
                    if make is not _dummy:     # (zero strides are read-only: not a reason)
                        first = first or GpundaError(
                            f"Operator {op.name} (node {node.name!r}): {e} "
                            f"(input shapes {list(in_shapes)})")
                    if make is makers[-1]:
                        raise first from None
    finally:
        ag.set_training(prev)
    # ops whose output count depends on params return a sequence even for one output
    rs = list(r) if isinstance(r, (tuple, list)) else [r]
    return [tuple(x.shape) for x in rs], [np.dtype(x.dtype) for x in rs]


class _Pass:
    """The shape and dtype tables of one inference, filled node by node."""

    def __init__(self, order, given_shapes, given_types, var_shape, entry_shapes=None):
        self.shapes, self.types = {}, {}
        self.changed = False
        self.done = set()
        for n in order:
            if n.op is None:
                self.shapes[(id(n), 0)] = var_shape(n, given_shapes)
                self.types[(id(n), 0)] = _var_dtype(n, given_types)
        for key, s in (entry_shapes or {}).items():
            self.put_shape(key, s, "infer_shape: a subgraph output")

    def put_shape(self, key, s, where):
        old = self.shapes.get(key)
        if s is None:
            return
        new = merge(old, tuple(s), where)
        if new != old:
            self.shapes[key] = new
            self.changed = True

    def put_type(self, key, t, overwrite=False):
        if t is None:
            return
        t = np.dtype(t)
        old = self.types.get(key)
        if old is None or (overwrite and old != t):
            self.types[key] = t
            self.changed = True

    # -- one node --------------------------------------------------------------
    def visit(self, n):
        if id(n) in self.done:
            return
        ins = [(id(c), i) for c, i in n.inputs]
        outs = [(id(n), i) for i in range(n.nout)]
        self._types(n, ins, outs)
        self._shapes(n, ins, outs)
        if all(known(self.shapes.get(k)) and self.types.get(k) is not None for k in ins + outs):
            self.done.add(id(n))

    def _where(self, n, what):
        return f"infer_shape: node {n.name!r} (operator {n.op.name}) {what}"

    def _shapes(self, n, ins, outs):
        op, p = n.op, n.p
        names = n.input_names()
        rule = rule_for(op)
        if rule is not None:
            in_s = [self.shapes.get(k) for k in ins]
            out_s = [self.shapes.get(k) for k in outs]
            try:
                new_in, new_out = rule(p, in_s, out_s)
            except GpundaError as e:
                raise GpundaError(self._where(n, f": {e}")) from None
            self._put_all(n, ins, new_in, names, "input")
            self._put_all(n, outs, new_out, None, "output")
            if not n.inputs:
                return      # an op without inputs is wholly described by its rule
        in_s = [self.shapes.get(k) for k in ins]
        if all(known(s) for s in in_s):
            if all(known(self.shapes.get(k)) for k in outs):
                return
            self._forward(n, ins, outs, in_s, names)
        elif op.infer_shape is not None and rule is None:
            # parameter shapes (weight, bias, label) follow from the data alone
            r = self._call_infer(n, [s if known(s) else None for s in in_s])
            if r is not None:
                self._put_all(n, ins, r[0], names, "input")
                self._put_all(n, outs, r[1], None, "output")

    def _call_infer(self, n, in_s):
        try:
            return n.op.infer_shape(n.p, list(in_s))
        except GpundaError as e:
            if all(known(s) for s in in_s):
                raise GpundaError(self._where(n, f": {e}")) from None
        except Exception:   # a rule that cannot read partial information says nothing
            pass
        return None

    def _forward(self, n, ins, outs, in_s, names):
        op, p = n.op, n.p
        if op.infer_shape is not None:
            r = self._call_infer(n, in_s)
            if r is not None:
                self._put_all(n, ins, r[0], names, "input")
                self._put_all(n, outs, r[1], None, "output")
                if all(known(self.shapes.get(k)) for k in outs):
                    return
        in_t = [self.types.get(k) for k in ins]
        first = next((t for t in in_t if t is not None), None)
        in_t = [t if t is not None else (first or np.dtype(np.float32)) for t in in_t]
        if op.random and not n.inputs and hasattr(p, "shape"):
            # a sampler's shape=() (MXNet's symbol default) is unknown in legacy shape
            # mode: the graph around it says (sym.random.normal() + x)
            from gpunda.util import is_np_shape
            out_s = [to_internal(p.shape, is_np_shape())]
            out_t = [np.dtype(getattr(p, "dtype", None) or np.float32)]
        else:
            out_s, out_t = _run_dummy(n, in_s, in_t)
        self._put_all(n, outs, out_s, None, "output")
        for k, t in zip(outs, out_t):
            self.put_type(k, t, overwrite=True)

    def _put_all(self, n, keys, shapes, names, what):
        if shapes is None:
            return
        for j, (k, s) in enumerate(zip(keys, shapes)):
            label = names[j] if names and j < len(names) else j
            self.put_shape(k, s, self._where(n, f"{what} {label}"))

    def _types(self, n, ins, outs):
        in_t = [self.types.get(k) for k in ins]
        try:
            r = node_types(n, in_t)
        except GpundaError as e:
            # a dtype the op refuses (BatchNorm's integer data or mixed parameters)
            raise GpundaError(f"infer_type: node {n.name!r}: {e}") from None
        if r is not None:
            for k, t in zip(ins, r[0]):
                self.put_type(k, t)
            for k, t in zip(outs, r[1]):
                self.put_type(k, t)


def node_types(n, in_t):
    """(input dtypes, output dtypes) of op node ``n`` from what is known of its input dtypes
    (``in_t``, None where unknown), None where they are not given; None when the op's rule
    cannot say. GpundaError for a dtype the op refuses."""
    op, p = n.op, n.p
    if op.infer_type is not None:
        try:
            return op.infer_type(p, list(in_t))
        except GpundaError:
            raise
        except Exception:
            return None
    # unknown inputs follow the first known one (MXNet's default rule)
    first = next((t for t in in_t if t is not None), None)
    # an explicit dtype parameter (Cast, Embedding) decides the outputs
    dt = p.dtype if getattr(p, "dtype", None) is not None and "dtype" in p._given else first
    return [first] * len(in_t), [dt] * n.nout


def infer_graph(sym, given_shapes, given_types, var_shape, entry_shapes=None):
    """Maps (id(node), output) -> internal shape / np.dtype (None when unknown).

    ``given_shapes`` holds internal shapes by variable name; ``var_shape(node,
    given)`` gives a variable's starting shape (its ``__shape__`` attribute);
    ``entry_shapes`` maps (id(node), output) to what is known of other entries (a
    subgraph's outputs, for inference through a subgraph node).
    """
    order = sym._topo()
    # a bfloat16 NDArray's dtype is MXNet's record spelling: the arrays' own dtype here
    given_types = {k: np_dtype(v) if isinstance(v, np.dtype) and v.kind == "V" else v
                   for k, v in given_types.items()}
    st = _Pass(order, given_shapes, given_types, var_shape, entry_shapes)
    ops = [n for n in order if n.op is not None]
    for _ in range(_MAX_PASSES):
        st.changed = False
        for n in ops:
            st.visit(n)
        for n in reversed(ops):
            st.visit(n)
        if not st.changed:
            break
    return st.shapes, st.types


def open_shapes(sym, given_shapes, given_types, ids, var_shape):
    """{id(node): shape} for the input-less nodes in ``ids`` (creation ops and samplers
    whose ``shape`` may hold unknown dimensions) once the graph's inputs have the given
    actual shapes; a node whose own shape is complete in the current mode is left out.
    GpundaError names a node whose unknown dimensions the graph does not determine."""
    from gpunda.util import is_np_shape
    from gpunda.ops.tensor.creation import open_range
    np_mode = is_np_shape()
    want = set(ids)
    nodes = [n for n in sym._topo() if id(n) in want]
    todo = []
    for n in nodes:
        # zeros(shape=()) is a scalar (shape_rules.creation); a sampler's () is unknown
        if open_range(n):       # arange(infer_range=True): a length the graph decides
            own = (-1,)
        else:
            own = () if not n.p.shape and not n.op.random else to_internal(n.p.shape, np_mode)
        if not known(own):
            todo.append((n, own))
    if not todo:
        return {}
    shapes, _ = infer_graph(sym, given_shapes, given_types, var_shape)
    out = {}
    for n, own in todo:
        s = shapes.get((id(n), 0))
        if not known(s):
            raise GpundaError(
                f"infer_shape: node {n.name!r} (operator {n.op.name}) has shape "
                f"{to_public(own, np_mode)} with unknown dimensions that the graph does not "
                f"determine for inputs {dict(given_shapes)}")
        out[id(n)] = s
    return out
