"""The graph pass behind ``amp.convert_symbol`` (MXNet's ``MXReducePrecisionSymbol``: the
ReducePrecision pass, a type inference, AMPInferUnknown and the ``__dtype__`` update), on
gpunda's Symbol graph.

The pass copies the graph node by node in DFS post-order and remembers, per output entry of
the original graph, whether its copy is known to be float32 (``fp32``) or the low precision
(``low``). A float32 op or an excluded node gets ``amp_cast(float32)`` on inputs not known to
be float32, a low-precision op ``amp_cast(target)`` on inputs that its type rule puts in the
target type, a widest-type op one ``amp_multicast`` over its inputs (or ``amp_cast``s to the
type its inputs already decide), a conditional op the float32 treatment when a parameter has
one of the listed values; other ops are copied and their output types followed from their
first input. A cast of one entry to one type is shared by every consumer. Outputs not known
to be float32 end in ``amp_cast(float32)``. Nodes are named as MXNet names them
(``<node><suffix>_amp_cast_<dtype>``, ``<node><suffix>_amp_multicast``).

Types are followed with float16 standing for the target type, bfloat16 included (gpunda's
op type rules treat both 16-bit floats alike, as MXNet's do).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import get_op
from gpunda.symbol.infer import infer_graph, node_types
from gpunda.symbol.symbol import (DTYPE_TO_CODE, Symbol, _Node, _var_shape, params_from_attrs,
                                  topo_order)

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)

# ops MXNet 1.9.1 registers with FListOutputNames (its legacy OperatorProperty ops all have
# one): a cast of their output i is suffixed with the output's name, others with "_<i>"
_NAMED_OUTPUTS = frozenset("""
_CachedOp _CachedOpThreadSafe _contrib_BatchNormWithReLU _contrib_hawkesll _contrib_index_array
_contrib_ROIAlign _contrib_RROIAlign _contrib_interleaved_matmul_selfatt_qk
_contrib_interleaved_matmul_selfatt_valatt _contrib_interleaved_matmul_encdec_qk
_contrib_interleaved_matmul_encdec_valatt Custom LeakyReLU Activation BatchNorm Concat
_rnn_param_concat Convolution CuDNNBatchNorm Deconvolution Dropout FullyConnected GroupNorm im2col
col2im LayerNorm LRN Pooling softmax SoftmaxActivation softmin UpSampling _npi_matmul
_npi_concatenate _npi_hstack _npi_dstack _npi_std _npi_var _contrib_calibrate_entropy
_contrib_quantize_asym _contrib_quantized_act _contrib_quantized_batch_norm
_contrib_quantized_concat _contrib_quantized_conv _contrib_quantized_elemwise_add
_contrib_quantized_elemwise_mul _contrib_quantized_flatten _contrib_quantized_fully_connected
_contrib_quantized_embedding _contrib_quantized_pooling _contrib_quantized_rnn RNN SoftmaxOutput
_sg_mkldnn_conv _sg_mkldnn_fully_connected _sg_mkldnn_selfatt_qk _sg_mkldnn_selfatt_valatt
_TensorRT elemwise_add make_loss
BatchNorm_v1 BilinearSampler Convolution_v1 Correlation Crop GridGenerator
IdentityAttachKLSparseReg InstanceNorm L2Normalization MakeLoss Pad Pooling_v1 ROIPooling
SVMOutput SequenceLast SequenceMask SequenceReverse SliceChannel SpatialTransformer SwapAxis
_CrossDeviceCopy _NDArray _Native _contrib_DeformableConvolution _contrib_DeformablePSROIPooling
_contrib_MultiBoxDetection _contrib_MultiBoxPrior _contrib_MultiBoxTarget _contrib_MultiProposal
_contrib_PSROIPooling _contrib_Proposal _contrib_SyncBatchNorm _contrib_count_sketch
_contrib_fft _contrib_ifft
""".split())


def _suffix(node, index, copy):
    """The part of a cast's name that names output ``index`` of ``node`` (MXNet's
    GetSuffix): empty for a variable, the output's name for ops that name their outputs,
    else the index."""
    if copy.op is None:
        return ""
    if node.op.name in _NAMED_OUTPUTS:
        full = node.output_names()[index]
        return "_" + full[len(node.name) + 1:]
    return f"_{index}"


def _types_of(node, first):
    """(input types, output types) of ``node`` when its first input has type ``first`` and
    the others are unknown; None when the op's rule cannot say."""
    in_t = [first] + [None] * (len(node.inputs) - 1)
    try:
        r = node_types(node, in_t)
    except Exception:       # a rule that refuses the type says nothing (MXNet: no success)
        return None
    if r is None:
        return None
    ins = list(r[0]) + [None] * (len(in_t) - len(r[0]))
    outs = list(r[1]) + [None] * (node.nout - len(r[1]))
    return [None if t is None else np.dtype(t) for t in ins], \
        [None if t is None else np.dtype(t) for t in outs]


class _Reducer:
    def __init__(self, target, target_ops, fp32_ops, widest_ops, conditional, excluded,
                 data_names, cast_optional_params):
        self.target = target            # "float16" or "bfloat16"
        self.target_ops, self.fp32_ops = set(target_ops), set(fp32_ops)
        self.widest_ops, self.conditional = set(widest_ops), conditional
        self.excluded, self.data_names = set(excluded), set(data_names)
        self.cast_optional = bool(cast_optional_params)
        self.copy = {}              # id(node) -> its copy
        self.fp32 = {}              # (id(node), i) -> entry of the copy known to be float32
        self.low = {}               # (id(node), i) -> entry of the copy known to be low precision
        self.cast_op = get_op("amp_cast")
        self.multicast_op = get_op("amp_multicast")

    # -- new nodes ----------------------------------------------------------------------
    def _cast(self, entry, dtype, table, consumer):
        """amp_cast(``dtype``) of the copy of ``entry``, remembered in ``table``; appended
        to ``consumer``'s inputs when one is given."""
        node, i = entry
        copy = self.copy[id(node)]
        attrs = {"dtype": dtype}
        name = f"{node.name}{_suffix(node, i, copy)}_amp_cast_{dtype}"
        p = params_from_attrs(self.cast_op, attrs, 1, "amp.convert_symbol")
        cast = _Node(self.cast_op, name, attrs, [(copy, i)], p)
        table[(id(node), i)] = (cast, 0)
        if consumer is not None:
            consumer.inputs.append((cast, 0))

    def _multicast(self, node, consumer):
        first, i = node.inputs[0]
        name = f"{first.name}{_suffix(first, i, self.copy[id(first)])}_amp_multicast"
        n = len(node.inputs)
        attrs = {"num_outputs": str(n)}
        p = params_from_attrs(self.multicast_op, attrs, n, "amp.convert_symbol")
        mc = _Node(self.multicast_op, name, attrs,
                   [(self.copy[id(c)], k) for c, k in node.inputs], p)
        consumer.inputs.extend((mc, k) for k in range(n))

    def _plain(self, entry):
        node, i = entry
        return self.copy[id(node)], i

    def _record_outputs(self, node, new, out_types):
        for i, t in enumerate(out_types):
            if t == _F16:
                self.low[(id(node), i)] = (new, i)
            elif t == _F32:
                self.fp32[(id(node), i)] = (new, i)

    def _conditional_fp32(self, node):
        if node.name in self.excluded or node.op.name not in self.conditional:
            return False
        for param, values in self.conditional[node.op.name].items():
            if param in node.attrs and node.attrs[param] in values:
                return True
        return False

    # -- one node ------------------------------------------------------------------------
    def visit(self, node):
        new = _Node(node.op, node.name, dict(node.attrs), [], node.p)
        if node.op is None:
            self.copy[id(node)] = new
            return
        opname = node.op.name
        mutable = set(node.op.mutated(node.p)) if node.op.mutates else set()
        if opname in self.fp32_ops or node.name in self.excluded:
            self._fp32_node(node, new, mutable=None)
        elif opname in self.target_ops:
            self._low_node(node, new, mutable)
        elif opname in self.widest_ops:
            self._widest_node(node, new, mutable)
        elif self._conditional_fp32(node):
            self._fp32_node(node, new, mutable=mutable)
        else:
            self._other_node(node, new)
        self.copy[id(node)] = new

    def _fp32_node(self, node, new, mutable):
        for i in range(node.nout):
            self.fp32[(id(node), i)] = (new, i)
        for k, (c, i) in enumerate(node.inputs):
            key = (id(c), i)
            if key in self.fp32:
                new.inputs.append(self.fp32[key])
            elif (c.op is None and mutable is None) or (mutable is not None and k in mutable):
                # a variable is taken to be float32 already; a mutated input stays itself
                new.inputs.append(self._plain((c, i)))
            else:
                self._cast((c, i), "float32", self.fp32, new)

    def _low_node(self, node, new, mutable):
        r = _types_of(node, _F16)
        in_t = r[0] if r is not None else [_F16] + [None] * (len(node.inputs) - 1)
        if r is not None:
            self._record_outputs(node, new, r[1])
        for k, (c, i) in enumerate(node.inputs):
            key = (id(c), i)
            if key in self.low:
                new.inputs.append(self.low[key])
            elif ((self.cast_optional and c.op is None and c.name not in self.data_names)
                  or k in mutable or not (in_t[k] is None or in_t[k] == _F16)):
                # a parameter converted offline, a mutated input, an input the op wants in
                # another type (BatchNorm's gamma): no cast
                new.inputs.append(self._plain((c, i)))
                if self.cast_optional and c.op is None:
                    self.low[key] = self._plain((c, i))
            else:
                self._cast((c, i), self.target, self.low, new)

    def _widest_node(self, node, new, mutable):
        if not node.inputs:
            raise GpundaError(f"amp.convert_symbol: node {node.name!r} (operator "
                              f"{node.op.name}) has no inputs; the symbol is malformed")
        if mutable:
            raise GpundaError(f"amp.convert_symbol: node {node.name!r} (operator "
                              f"{node.op.name}) mutates its inputs; a widest-type op cannot")
        keys = [(id(c), i) for c, i in node.inputs]
        if any(k not in self.low and k not in self.fp32 for k in keys):
            self._multicast(node, new)
            return
        to_fp32 = any(k in self.fp32 for k in keys)
        table = self.fp32 if to_fp32 else self.low
        for i in range(node.nout):
            table[(id(node), i)] = (new, i)
        for (c, i), key in zip(node.inputs, keys):
            if key in table:
                new.inputs.append(table[key])
            else:
                self._cast((c, i), "float32" if to_fp32 else self.target, table, new)

    def _other_node(self, node, new):
        if node.inputs:
            key = (id(node.inputs[0][0]), node.inputs[0][1])
            if key in self.low or key in self.fp32:
                r = _types_of(node, _F16 if key in self.low else _F32)
                if r is not None:
                    self._record_outputs(node, new, r[1])
        new.inputs.extend(self._plain(e) for e in node.inputs)

    def outputs(self, heads):
        out = []
        for node, i in heads:
            key = (id(node), i)
            if key not in self.fp32:
                self._cast((node, i), "float32", self.fp32, None)
            out.append(self.fp32[key])
        return out


def _infer_var_types(sym, data_names, bf16):
    """({variable name: dtype or None}, the graph inferred) for ``sym`` with the data inputs
    float32 and nothing else given (bfloat16 casts followed as float16)."""
    memo = {}
    for n in sym._topo():
        p = n.p
        if bf16 and n.op is not None and n.op.name == "amp_cast" and n.attrs.get("dtype") == \
                "bfloat16":
            p = p.replace(dtype=_F16)
        # as MXNet's, this inference reads no __dtype__ attribute: only the data are given
        attrs = n.attrs if n.op is not None else {k: v for k, v in n.attrs.items()
                                                   if k != "__dtype__"}
        memo[id(n)] = _Node(n.op, n.name, attrs, [(memo[id(c)], i) for c, i in n.inputs], p)
    proxy = Symbol([(memo[id(n)], i) for n, i in sym._outputs])
    _, types = infer_graph(proxy, {}, {k: _F32 for k in data_names}, _var_shape)
    return {n.name: types.get((id(n), 0)) for n in proxy._topo() if n.op is None}, proxy


def _unknown_vars_from_casts(proxy, inferred):
    """MXNet's AMPInferUnknown: a variable of unknown type read only by casts to one type
    takes that type (an amp_multicast over variables alone counts as a cast to the target)."""
    result = dict(inferred)
    seen = {}

    def update(var, t):
        if var.name not in seen:
            if result.get(var.name) is None:
                seen[var.name] = t
                result[var.name] = t
        elif seen[var.name] != t:
            result[var.name] = inferred.get(var.name)

    for n in proxy._topo():
        if n.op is None:
            continue
        if n.op.name == "amp_cast":
            for c, _ in n.inputs:
                if c.op is None:
                    update(c, np.dtype(n.p.dtype))
        elif n.op.name == "amp_multicast":
            if all(c.op is None for c, _ in n.inputs):
                for c, _ in n.inputs:
                    update(c, _F16)
    return result


def reduce_precision(sym, target, target_ops, fp32_ops, widest_ops, conditional, excluded,
                     data_names, model_params, cast_optional_params):
    """``sym`` with amp_cast/amp_multicast nodes for ``target`` ("float16"/"bfloat16") and
    ``__dtype__`` attributes on its variables, as MXNet's MXReducePrecisionSymbol.
    ``conditional`` maps op -> {param: [values]}."""
    red = _Reducer(target, target_ops, fp32_ops, widest_ops, conditional, excluded,
                   data_names, cast_optional_params)
    for node in topo_order(sym._outputs):
        red.visit(node)
    out = Symbol(red.outputs(sym._outputs))
    bf16 = target == "bfloat16"
    inferred, proxy = _infer_var_types(out, data_names, bf16)
    if cast_optional_params:
        inferred = _unknown_vars_from_casts(proxy, inferred)
    low_code = 12 if bf16 else DTYPE_TO_CODE["float16"]

    def code(t):
        if t is None:
            return 0                        # unknown: float32
        if t == _F16:
            return low_code
        return DTYPE_TO_CODE.get(np.dtype(t).name, 0)

    with_dtype = {k: 0 for k in data_names}
    without = {}
    variables = [n for n in out._topo() if n.op is None]
    for n in variables:
        (with_dtype if "__dtype__" in n.attrs else without)[n.name] = code(inferred.get(n.name))
    model_params = set(model_params)
    for n in variables:
        if model_params:
            if n.name in model_params:
                v = with_dtype.get(n.name, without.get(n.name, 0))
                n.attrs["__dtype__"] = str(v)
        elif n.name in with_dtype and "__dtype__" in n.attrs:
            n.attrs["__dtype__"] = str(with_dtype[n.name])
    return out

