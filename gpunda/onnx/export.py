"""``mx.onnx.export_model``: a Symbol and its parameters as an ONNX model file.

The Symbol graph is walked in topological order; each op node is handed to the
converter registered for its op (``_registry``), which adds ONNX nodes through the
``GraphBuilder``. Shapes and dtypes come from gpunda's own inference on the given input
shapes. The model is checked with ``onnx.checker`` and written to a temporary file that
is renamed into place, so a failed export leaves no partial file behind.
"""
from __future__ import annotations

import logging
import os
import tempfile

import numpy as np

from gpunda.base import GpundaError
from gpunda.onnx._builder import GraphBuilder, ConversionError
from gpunda.onnx._registry import converter_for, load_all
from gpunda.onnx import _mxconv

__all__ = ["export_model", "get_operator_support", "MIN_OPSET", "DEFAULT_OPSET_CAP"]

_log = logging.getLogger("gpunda")

MIN_OPSET = 13
# the newest opset the converters are checked against; newer onnx packages still
# default to it (ONNX Runtime and onnx2torch lag behind onnx's newest opset)
DEFAULT_OPSET_CAP = 21


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper, checker, shape_inference  # noqa: F401
    except ImportError as e:
        raise ImportError("mx.onnx needs the onnx package: pip install 'gpunda[onnx]' "
                          "(onnx, onnxruntime)") from e
    return onnx


def get_operator_support(opset_version=None):
    """Sorted names of the MXNet ops that ``export_model`` converts (gpunda's converters
    and those registered with ``MXNetGraph.register`` at or below the opset).

    Args:
        opset_version: checked to be one export supports (``MIN_OPSET`` .. onnx's newest);
            every converter works for all of them.
    """
    onnx = _onnx()
    if opset_version is not None:
        _check_opset(onnx, opset_version)
    top = opset_version if opset_version is not None else onnx.defs.onnx_opset_version()
    user = {op for v, table in _mxconv.REGISTRY.items() if v <= top
            for op, fn in table.items() if _mxconv.lookup(op, top) is fn
            and not getattr(fn, "_gpunda_builtin", False)}
    return sorted(set(load_all()) | user)


def _check_opset(onnx, opset):
    newest = onnx.defs.onnx_opset_version()
    if not isinstance(opset, (int, np.integer)) or not MIN_OPSET <= int(opset) <= newest:
        raise GpundaError(f"export_model: opset_version={opset!r} is not supported; "
                          f"choose {MIN_OPSET}..{newest}")
    return int(opset)


def _load_inputs(sym, params):
    from gpunda import ndarray as nd
    from gpunda import symbol as _sym
    if isinstance(sym, (str, os.PathLike)):
        sym = _sym.load(os.fspath(sym))
    if not isinstance(sym, _sym.Symbol):
        raise ValueError("export_model: sym must be a Symbol or the path of a -symbol.json "
                         f"file, got {type(sym).__name__}")
    if isinstance(params, (str, os.PathLike)):
        params = nd.load(os.fspath(params))
    if isinstance(params, (list, tuple)) and len(params) == 2:
        merged = {}
        merged.update(params[0])
        merged.update(params[1])
        params = merged
    if not isinstance(params, dict):
        raise ValueError("export_model: params must be a dict, [arg_params, aux_params] or "
                         f"the path of a .params file, got {type(params).__name__}")
    weights = {}
    for k, v in params.items():
        name = k.split(":", 1)[1] if k.startswith(("arg:", "aux:")) else k
        weights[name] = v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)
    return sym, weights


def _graph_inputs(sym, weights, in_shapes, in_types, dynamic_input_shapes=None):
    """(name, shape, dtype) of the data inputs: every input of ``sym`` without a value in
    params, except the label of the last node, in the order of ``list_inputs``; and the
    dynamic_input_shapes of those.

    The per-input lists may also hold an entry for that label (a legacy checkpoint's
    ``SoftmaxOutput`` label, as its ``label_shapes`` were given): it is dropped with the
    label, as MXNet's exporter drops the label input."""
    internals = sym.get_internals().list_outputs()
    label = None
    if internals:
        last = internals[-1]
        label = (last[:-len("_output")] if last.endswith("_output") else last) + "_label"
    unbound = [n for n in sym.list_inputs() if n not in weights]
    names = [n for n in unbound if n != label]
    if in_shapes is None:
        in_shapes = []
    in_shapes = [tuple(s) for s in in_shapes]
    if len(unbound) > len(names) and len(in_shapes) == len(unbound):
        at = unbound.index(label)

        def drop(seq):
            if isinstance(seq, (list, tuple)) and len(seq) == len(unbound):
                return [v for k, v in enumerate(seq) if k != at]
            return seq
        in_shapes, in_types = drop(in_shapes), drop(in_types)
        dynamic_input_shapes = drop(dynamic_input_shapes)
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    if len(in_types) != len(in_shapes):
        raise ValueError(f"export_model: {len(in_types)} in_types for {len(in_shapes)} "
                         "in_shapes; the lengths must be equal")
    if len(names) > len(in_shapes):
        missing = names[len(in_shapes):]
        raise GpundaError(f"export_model: no value in params and no input shape for "
                          f"argument(s) {missing}; the data inputs are {names[:len(in_shapes)]}"
                          f" (in_shapes has {len(in_shapes)}); params lacks "
                          f"{[m for m in missing]} or in_shapes is too short")
    if len(names) < len(in_shapes):
        raise GpundaError(f"export_model: {len(in_shapes)} in_shapes given but the symbol "
                          f"has {len(names)} data input(s) {names}"
                          + (f" (and the label {label!r}, which is not exported)"
                             if len(unbound) > len(names) else ""))
    return ([(n, s, np.dtype(t)) for n, s, t in zip(names, in_shapes, in_types)],
            dynamic_input_shapes)


def _infer(sym, inputs, weights):
    from gpunda.symbol.infer import infer_graph
    from gpunda.symbol.symbol import _var_shape
    shapes = {n: s for n, s, _ in inputs}
    types = {n: t for n, _, t in inputs}
    for k, v in weights.items():
        shapes[k], types[k] = tuple(v.shape), v.dtype
    known = set(sym.list_inputs())
    shapes = {k: v for k, v in shapes.items() if k in known}
    types = {k: v for k, v in types.items() if k in known}
    return infer_graph(sym, shapes, types, _var_shape)


def _varying(sym, inputs, weights, dynamic_shapes, base_shapes):
    """Which dims of each entry change when the dynamic input dims change."""
    def bump(only_first):
        return [(n, tuple(d + 1 if dyn[k] is None and (k == 0 or not only_first) else d
                          for k, d in enumerate(s)), t)
                for (n, s, t), dyn in zip(inputs, dynamic_shapes)]
    other = {}
    # all dynamic dims at once; if the graph cannot take that (a Dense layer fixes the
    # spatial size), the batch dims alone
    for only_first in (False, True):
        try:
            other, _ = _infer(sym, bump(only_first), weights)
            break
        except GpundaError:
            continue
    res = {}
    for key, s in base_shapes.items():
        o = other.get(key)
        if s is not None and o is not None and len(o) == len(s):
            diff = tuple(k for k in range(len(s)) if s[k] != o[k])
            if diff:
                res[key] = diff
    return res


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path="model.onnx", verbose=False, dynamic=False,
                 dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None, opset_version=None):
    """Export a Symbol and its parameters as an ONNX model (MXNet 1.9.1's signature).

    Args:
        sym: a Symbol or the path of a ``-symbol.json`` file.
        params: a dict name -> NDArray (``arg:``/``aux:`` prefixes allowed), a list
            ``[arg_params, aux_params]`` or the path of a ``.params`` file.
        in_shapes: one shape per data input (inputs without a value in params, in
            ``list_inputs`` order; the last node's ``*_label`` is left out).
        in_types: one dtype, or one per input (default float32).
        onnx_file_path: where to write the model.
        verbose: log each converted node.
        dynamic: make input dims symbolic; ``dynamic_input_shapes`` (one tuple per input,
            ``None`` for a dynamic dim) says which, all dims otherwise.
        run_shape_inference: store ONNX's shape inference results in the model.
        input_type, input_shape: MXNet's older names of ``in_types``/``in_shapes``.
        opset_version: ONNX opset (default: onnx's newest, at most ``DEFAULT_OPSET_CAP``).

    Returns:
        ``onnx_file_path``.

    Raises:
        GpundaError: a node without ONNX form (naming node and op), a missing parameter,
            an unsupported opset, a path that cannot be written.

    Example:
        >>> mx.onnx.export_model("net-symbol.json", "net-0000.params",
        ...                      [(1, 3, 224, 224)], np.float32, "net.onnx")
    """
    onnx = _onnx()
    if input_type is not None:
        in_types = input_type
    if input_shape is not None:
        in_shapes = input_shape
    opset = (min(onnx.defs.onnx_opset_version(), DEFAULT_OPSET_CAP) if opset_version is None
             else _check_opset(onnx, opset_version))
    model = build_model(onnx, sym, params, in_shapes, in_types, opset, verbose, dynamic,
                        dynamic_input_shapes, check=False)
    if run_shape_inference:
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception as e:  # noqa: BLE001 -- as MXNet: keep the model without it
            _log.info("export_model: ONNX shape inference failed (%s); model kept as is", e)
    # serialising a model with its weights is most of an export's time: do it once, for
    # the checker and the file both
    data = model.SerializeToString()
    _check(onnx, data)
    _write_atomically(data, onnx_file_path)
    _log.info("export_model: input shapes %s; ONNX model saved to %s", in_shapes,
              onnx_file_path)
    return onnx_file_path


def build_model(onnx, sym, params, in_shapes, in_types, opset, verbose=False, dynamic=False,
                dynamic_input_shapes=None, check=True):
    """The ``onnx.ModelProto`` of ``sym`` (see ``export_model``), checked with
    ``onnx.checker`` unless ``check`` is False."""
    from onnx import helper, numpy_helper
    sym, weights = _load_inputs(sym, params)
    inputs, dynamic_input_shapes = _graph_inputs(sym, weights, in_shapes, in_types,
                                                 dynamic_input_shapes)
    shapes, dtypes = _infer(sym, inputs, weights)
    if dynamic:
        dyn = dynamic_input_shapes or [[None] * len(s) for _, s, _ in inputs]
        if len(dyn) != len(inputs):
            raise ValueError(f"export_model: {len(dyn)} dynamic_input_shapes for "
                             f"{len(inputs)} inputs")
        dyn = [tuple(d) for d in dyn]
        varying = _varying(sym, inputs, weights, dyn, shapes)
    else:
        dyn, varying = [tuple(s) for _, s, _ in inputs], {}
    g = GraphBuilder(helper, numpy_helper, opset, shapes, dtypes, weights, varying)
    order = sym._topo()
    input_names = {n for n, _, _ in inputs}
    bridge = (_mxconv.ExportBridge(sym, order, g, weights, inputs, dyn)
              if _mxconv.has_user_converters() else None)
    for idx, node in enumerate(order):
        if node.op is None:
            g.bind_var(node, node.name)
            continue
        for k, (src, j) in enumerate(node.inputs):
            if src.op is None and src.name not in weights and src.name not in input_names:
                continue   # a label: converters of loss layers ignore it
            if shapes.get((id(src), j)) is None:
                raise GpundaError(f"export_model: the shape of input {k} of node "
                                  f"{node.name!r} (op {node.op.name}) cannot be inferred "
                                  "from in_shapes")
        user = bridge.converter_for(node) if bridge is not None else None
        if user is not None:    # registered with MXNetGraph.register: it goes first
            if verbose:
                _log.info("export_model: converting %s (%s) with %s", node.name,
                          node.op.name, getattr(user, "__name__", user))
            g.node = node
            bridge.convert(idx, node, user)
            continue
        fn = converter_for(node.op)
        if fn is None:
            raise ConversionError(f"export_model: node {node.name!r} has op {node.op.name!r}, "
                                  "which has no ONNX converter (see "
                                  "mx.onnx.get_operator_support())")
        if verbose:
            _log.info("export_model: converting %s (%s)", node.name, node.op.name)
        g.node = node
        fn(g, node)
    g.node = None
    graph_inputs = []
    for (name, shape, dt), dshape in zip(inputs, dyn):
        dims = [f"{name}_dim{k}" if dshape[k] is None else int(d) for k, d in enumerate(shape)]
        graph_inputs.append(helper.make_tensor_value_info(name, g.onnx_dtype(dt), dims))
    graph_outputs, seen = [], set()
    for k, (node, i) in enumerate(sym._outputs):
        name = g.name_of((node, i))
        if name in seen or name in input_names or name in weights:
            alias = g.fresh(sym.list_outputs()[k])
            g.add("Identity", [name], [alias])
            name = alias
        want = sym.list_outputs()[k]
        if name != want and want not in g._taken and node.op is not None:
            _rename(g.nodes, name, want)   # the graph output keeps MXNet's name
            name = want
        seen.add(name)
        shape = shapes[(id(node), i)]
        vary = varying.get((id(node), i), ())
        dims = [f"{name}_dim{j}" if j in vary else int(d) for j, d in enumerate(shape)]
        graph_outputs.append(helper.make_tensor_value_info(
            name, g.onnx_dtype(dtypes[(id(node), i)]), dims))
    used = {x for n in g.nodes for x in n.input} | {o.name for o in graph_outputs}
    inits = [numpy_helper.from_array(np.asarray(v, order="C"), k)
             for k, v in list(weights.items()) + list(g.constants.items()) if k in used]
    graph = helper.make_graph(g.nodes, "gpunda_exported_model", graph_inputs, graph_outputs,
                              initializer=inits)
    opsets = [helper.make_opsetid("", opset)]
    # The IR version the opset needs, not the newest the installed onnx knows: a model from
    # onnx 1.20+ would otherwise say IR 14, which the ONNX Runtime that pip gives Python 3.10
    # (1.23, IR <= 11) refuses to load, though nothing in the graph needs it.
    model = helper.make_model(graph, producer_name="gpunda", opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets, ignore_unknown=True))
    if check:
        _check(onnx, model)
    return model


def _check(onnx, model):
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise GpundaError(f"export_model: the ONNX model fails onnx.checker: {e}") from None


def _rename(nodes, old, new):
    for n in nodes:
        for seq in (n.input, n.output):
            for k, v in enumerate(seq):
                if v == old:
                    seq[k] = new


def _write_atomically(data, path):
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".onnx-", suffix=".tmp", dir=folder)
    except OSError as e:
        raise GpundaError(f"export_model: cannot write onnx_file_path={path!r}: "
                          f"{e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise GpundaError(f"export_model: cannot write onnx_file_path={path!r}: "
                          f"{e.strerror or e}") from None
