"""GraphBuilder: the ONNX graph under construction while a Symbol is converted.

It knows every Symbol entry's ONNX tensor name, inferred shape and dtype, holds the
initializers (parameters and constants) and the nodes added so far, and hands out
unique names. Converters (``ops_*.py``) talk only to this object.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError

__all__ = ["GraphBuilder", "ConversionError"]


class ConversionError(GpundaError):
    """A node of the Symbol cannot be expressed in ONNX (message names node and op)."""


# ONNX ops that ONNX Runtime's CPU kernels take in float32 only (see _ort_double)
_ORT_FLOAT32_ONLY = frozenset((
    "Softplus", "Softsign", "Elu", "Selu", "HardSigmoid", "ThresholdedRelu", "Cos", "Tan",
    "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf", "Asin", "Acos", "Atan"))


class GraphBuilder:
    """State of one export: names, shapes and dtypes of entries, nodes and initializers."""

    def __init__(self, helper, numpy_helper, opset, shapes, dtypes, weights, varying):
        self.helper, self.numpy_helper = helper, numpy_helper
        self.opset = opset
        self._shapes, self._dtypes = shapes, dtypes
        self.weights = weights          # initializer name -> numpy value (parameters)
        self._varying = varying         # (id(node), i) -> dims that change with dynamic inputs
        self.nodes, self.constants = [], {}
        self._names = {}                # (id(node), i) -> ONNX tensor name
        self._taken = set(weights)
        self.node = None                # the Symbol node being converted (for errors)

    # -- names --------------------------------------------------------------------------
    def fresh(self, hint):
        """A tensor/node name not used yet, based on ``hint``."""
        name, k = hint, 0
        while name in self._taken:
            k += 1
            name = f"{hint}_{k}"
        self._taken.add(name)
        return name

    def bind_var(self, node, name):
        self._names[(id(node), 0)] = name
        self._taken.add(name)

    def outs(self, node, count=None):
        """ONNX names for the visible outputs of ``node`` (MXNet's output names)."""
        names = node.output_names()[:count or node.nvis]
        res = []
        for i, n in enumerate(names):
            key = (id(node), i)
            if key not in self._names:
                self._names[key] = self.fresh(n)
            res.append(self._names[key])
        return res

    def out(self, node):
        return self.outs(node, 1)[0]

    def bind(self, node, i, name):
        """Make output ``i`` of ``node`` the existing tensor ``name`` (an Identity if needed)."""
        key = (id(node), i)
        if key in self._names:
            self.add("Identity", [name], [self._names[key]])
        else:
            self._names[key] = name

    # -- inputs of the node being converted -------------------------------------------
    def name_of(self, entry):
        key = (id(entry[0]), entry[1])
        if key not in self._names:
            raise GpundaError(f"export_model: internal: entry {entry[0].name}[{entry[1]}] "
                              "has no ONNX tensor yet")
        return self._names[key]

    def inp(self, node, i):
        return self.name_of(node.inputs[i])

    def in_shape(self, node, i):
        n, k = node.inputs[i]
        return self._shapes[(id(n), k)]

    def in_dtype(self, node, i):
        n, k = node.inputs[i]
        return np.dtype(self._dtypes[(id(n), k)])

    def out_shape(self, node, i=0):
        return self._shapes[(id(node), i)]

    def out_dtype(self, node, i=0):
        return np.dtype(self._dtypes[(id(node), i)])

    def set_output_type(self, node, i, shape, dtype):
        """Record what a converter learned by evaluating ``node`` (a constant's dtype)."""
        self._shapes[(id(node), i)] = tuple(shape)
        self._dtypes[(id(node), i)] = np.dtype(dtype)

    def varying_in(self, node, i):
        """Dims of input ``i`` that change with the dynamic input dims (empty if static)."""
        n, k = node.inputs[i]
        return self._varying.get((id(n), k), ())

    def varying_out(self, node, i=0):
        return self._varying.get((id(node), i), ())

    def weight(self, node, i):
        """The value of input ``i`` when it is a parameter (an initializer), else None."""
        n, k = node.inputs[i]
        if n.op is None:
            return self.weights.get(n.name)
        # computed from parameters only (gluon's RNN layers concatenate theirs): evaluate
        from gpunda.symbol.symbol import Symbol
        from gpunda import ndarray as nd
        sub = Symbol([(n, k)])
        names = sub.list_inputs()
        if not all(m in self.weights for m in names):
            return None
        return sub.eval(**{m: nd.array(self.weights[m], dtype=self.weights[m].dtype)
                           for m in names})[0].asnumpy()

    # -- building ------------------------------------------------------------------------
    def add(self, op_type, inputs, outputs=1, **attrs):
        """Add one ONNX node; ``outputs`` is a list of names or a count. Returns the
        output name (one output) or the list of names."""
        hint = self.node.name if self.node is not None else op_type.lower()
        if isinstance(outputs, int):
            outputs = [self.fresh(f"{hint}_{op_type.lower()}") for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        if op_type in _ORT_FLOAT32_ONLY:    # a float64 form ONNX Runtime runs
            from gpunda.onnx._ort_double import float64_form
            done = float64_form(self, op_type, inputs, outputs, attrs)
            if done is not None:
                return done
        self.nodes.append(self.helper.make_node(op_type, list(inputs), list(outputs),
                                                name=self.fresh(f"{hint}/{op_type}"), **attrs))
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def const(self, value, dtype=None, hint="const"):
        """An initializer holding ``value`` (numpy array or sequence)."""
        arr = np.asarray(value, dtype=dtype)
        name = self.fresh(f"{self.node.name}_{hint}" if self.node is not None else hint)
        self.constants[name] = arr
        return name

    def ints(self, values, hint="ints"):
        return self.const(np.asarray(list(values), dtype=np.int64), hint=hint)

    def scalar(self, value, dtype, hint="scalar"):
        return self.const(np.asarray(value, dtype=dtype), hint=hint)

    def unsupported(self, node, why):
        """The error for a node whose params have no ONNX form."""
        return ConversionError(f"export_model: node {node.name!r} (op {node.op.name}) cannot "
                               f"be exported to ONNX: {why}")

    def onnx_dtype(self, dtype):
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    # -- helpers shared by families ----------------------------------------------------
    def reduce(self, op_type, x, axes, keepdims, out=1):
        """Reduce* with ``axes`` (None: all), as an input from opset 18 (ReduceSum: 13)."""
        as_input = self.opset >= (13 if op_type == "ReduceSum" else 18)
        kd = int(bool(keepdims))
        if axes is None:
            return self.add(op_type, [x], out, keepdims=kd)
        if as_input:
            return self.add(op_type, [x, self.ints(axes, "axes")], out, keepdims=kd)
        return self.add(op_type, [x], out, axes=list(axes), keepdims=kd)

    def unsqueeze(self, x, axes, out=1):
        return self.add("Unsqueeze", [x, self.ints(axes, "axes")], out)

    def squeeze(self, x, axes, out=1):
        if axes is None:
            return self.add("Squeeze", [x], out)
        return self.add("Squeeze", [x, self.ints(axes, "axes")], out)

    def reshape_to(self, node, x, target, out=1, in_index=0, out_index=0):
        """Reshape ``x`` (input ``in_index`` of ``node``) to the static ``target`` shape.

        Dims of the result that vary with dynamic inputs are copied (ONNX 0, when they stay
        in place) or inferred (-1, at most one), so the graph stays dynamic."""
        spec = [int(d) for d in target]
        vary_out = self.varying_out(node, out_index)
        if vary_out:
            in_shape = self.in_shape(node, in_index)
            vary_in = self.varying_in(node, in_index)
            rest = []
            for k in vary_out:
                if k in vary_in and in_shape[k] == target[k]:
                    spec[k] = 0
                else:
                    rest.append(k)
            if len(rest) > 1:
                raise self.unsupported(node, f"its result {tuple(target)} has several "
                                             "dynamic dimensions that do not stay in place")
            for k in rest:
                spec[k] = -1
        return self.add("Reshape", [x, self.ints(spec, "shape")], out)
