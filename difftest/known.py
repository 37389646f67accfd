"""Differences from MXNet 1.9.1 that are explained: deliberate ones, and classes another
change is fixing (status "being fixed (issue 38)"; delete the rule when it lands).

A rule matches one difference ``(where, what, detail)`` of one program; every field
given must match: ``kind`` (program kind), ``ops`` (op names), ``what`` (difference
classes), ``where`` (entry names), ``detail`` (substring), ``steps`` (a substring of the
program's JSON). ``classify`` splits a program's differences into unexplained ones and
the tags of the rules that explained the rest. docs/compat.md lists the same table.
"""
from __future__ import annotations

import json
import os

FIXING = "being fixed (issue 38)"

DELIBERATE = "deliberate"
RANDOM_NOTE = "random"


def _empty_result(prog, d, ref, got):
    ent = (got or {}).get(d[0].split("[")[0], {})
    return ent.get("t") == "a" and 0 in ent.get("shape", [1])


def _negative_index_write(prog, d, ref=None, got=None):
    """A setitem through an integer index array (an input) holding a negative entry."""
    from difftest.interp import make_data
    steps = prog["steps"]
    inputs = {st[1]: (i, st) for i, st in enumerate(steps) if st[0] == "input"}
    for st in steps:
        if st[0] == "setitem" and isinstance(st[3], str) and st[3][1:] in inputs:
            i, spec = inputs[st[3][1:]]
            if "int" not in spec[3] or len(spec) < 9 or spec[7] >= 0:
                continue
            seed = int(prog.get("seed", 0)) * 1009 + i     # as Interp.step_input
            if (make_data(seed, spec[2], spec[3], spec[5], spec[7], spec[8]) < 0).any():
                return True
    return False


def _first_dtype(prog):
    """The dtype of the program's first input."""
    for st in prog["steps"]:
        if st[0] == "input":
            return st[3]
    return None


# NOTE [MXNet's CPU-only kernel gaps]: MXNet's CPU wheel lacks kernels its GPU build has
# (float16 GEMM, float16 sort, float16/float64 LRN, SoftmaxActivation and GridGenerator;
# MKL-DNN's amp_cast handles neither float64 nor integers). gpunda gives the GPU build's
# answer on every device; integer and bool inputs, refused on every device, are refused.
_CPU_GAPS = {
    "Convolution": ("float16",), "Deconvolution": ("float16",),
    "FullyConnected": ("float16",), "dot": ("float16",), "batch_dot": ("float16",),
    "argsort": ("float16",), "sort": ("float16",),
    "LRN": ("float16", "float64"), "SoftmaxActivation": ("float16", "float64"),
    "GridGenerator": ("float16", "float64"),
}


def _cpu_gap(prog, d, ref=None, got=None):
    op = prog.get("op")
    if op == "amp_cast":
        return True
    return _first_dtype(prog) in _CPU_GAPS.get(op, ())


def _index_copy_out_of_range(prog, d, ref=None, got=None):
    """index_copy whose index vector (input 1, truncated) leaves [0, rows of input 0)."""
    from difftest.interp import make_data
    steps = prog["steps"]
    ins = [(i, st) for i, st in enumerate(steps) if st[0] == "input"]
    if len(ins) < 2 or not ins[0][1][2]:
        return False
    seed = int(prog.get("seed", 0)) * 1009
    i, spec = ins[1]
    idx = make_data(seed + i, spec[2], spec[3], spec[5], *(spec[7:9] if len(spec) > 8 else ()))
    idx = idx.astype("float64").astype("int64")
    return bool(((idx < 0) | (idx >= ins[0][1][2][0])).any())


def _softmax_of_nan(prog, d, ref=None, got=None):
    """A program with a softmax whose recorded MXNet answers hold a NaN somewhere."""
    import numpy as np
    if "softmax" not in json.dumps(prog["steps"]):
        return False
    return any(isinstance(e, dict) and "v" in e and np.asarray(e["v"]).dtype.kind == "f"
               and np.isnan(np.asarray(e["v"])).any() for e in (ref or {}).values())


def _mean_add_grad(prog, d, ref=None, got=None):
    """An autograd program accumulating (grad_req='add') a gradient through a mean."""
    text = json.dumps(prog["steps"])
    return '"add"' in text and ('"nd.mean"' in text or '"np.mean"' in text)


RULES = [
    # -- MXNet 1.9.1 limitations gpunda does not copy -------------------------------------
    {"tag": "mxnet-cpu-kernel-gap", "status": "MXNet limitation", "what": {"kind"},
     "detail": "MXNetError vs array", "ops": set(_CPU_GAPS) | {"amp_cast"}, "test": _cpu_gap,
     "reason": "MXNet's CPU wheel has no kernel for these dtypes where its GPU build has one "
               "(\"FP16 gemm on cpu not implemented\", \"float16 fully connected layer is "
               "only supported by CuDNN\", \"This operation does not support float16\" in "
               "sort, float32-only LRN/SoftmaxActivation/GridGenerator, \"unknown type for "
               "MKLDNN\" in amp_cast); gpunda computes them on every device as the GPU build"},
    {"tag": "mxnet-bug-unchecked", "status": "MXNet bug", "what": {"kind", "inplace"},
     "ops": {"Reshape", "broadcast_like", "LRN", "Correlation", "im2col",
             "_sample_negative_binomial", "_random_negative_binomial_like",
             "_mp_adamw_update"},
     "test": lambda prog, d, ref=None, got=None: (
         d[2] == "array vs MXNetError" or "changed by MXNet, untouched by gpunda" in d[2]),
     "reason": "MXNet 1.9.1 does not check these inputs and computes from memory it does not "
               "own (a process abort or garbage in our runs): Reshape to a shape of another "
               "size, broadcast_like with only one of lhs_axes/rhs_axes, LRN with an even "
               "nsize, Correlation of inputs of different shapes, im2col with a negative pad "
               "or a kernel of another rank than the data, a negative binomial with p outside "
               "[0, 1], _mp_adamw_update with states of another shape than the weight; gpunda "
               "refuses them, writing nothing"},
    {"tag": "mxnet-bug-norm-out-dtype", "status": "MXNet bug", "what": {"kind"},
     "ops": {"norm"}, "detail": "MXNetError vs array", "steps": "out_dtype",
     "reason": "MXNet 1.9.1's norm fails for every out_dtype other than the input's "
               "(\"TBlob.get_with_shape: data type do not match\"); gpunda casts the result "
               "(an out_dtype outside norm's enum is refused as in MXNet)"},
    {"tag": "mxnet-missing-kernel", "status": DELIBERATE, "what": {"kind", "inplace"},
     "ops": {"_sparse_retain", "_square_sum", "_sparse_adagrad_update", "clip",
             "cast_storage", "broadcast_div", "elemwise_sub", "sgd_update", "Pooling",
             "im2col"},
     "test": lambda prog, d, ref=None, got=None: (
         d[2] == "MXNetError vs array" or "untouched by MXNet, changed by gpunda" in d[2]),
     "reason": "MXNet has no kernel for these storage-type or parameter combinations "
               "(\"Operator not implemented\" in storage type inference: _sparse_retain and "
               "_square_sum of dense data, _sparse_adagrad_update with a dense gradient, clip "
               "of a sparse array, csr -> row_sparse casts; broadcast_div of csr and dense; "
               "the float32/64-only csr kernel of elemwise_sub; sgd_update and "
               "sparse.adagrad_update with a row_sparse gradient need out=weight; its shape "
               "functions index past the end for pooling_convention='same' (any Pooling) and "
               "for im2col of 1-D data); gpunda computes them (densifying where needed) with "
               "the result of the dense call"},
    {"tag": "negative-index-write", "status": "MXNet bug", "kind": {"indexing"},
     "test": _negative_index_write,
     "reason": "a[ix] = v with a negative entry in an integer index array: MXNet's "
               "_scatter_set_nd does not wrap it and writes out of bounds (other memory: "
               "the index array itself, or a heap abort); gpunda wraps it as its reads do"},
    {"tag": "legacy-zero-size", "status": "MXNet limitation", "what": {"kind"},
     "detail": "MXNetError vs array", "test": _empty_result,
     "reason": "legacy (`nd`) mode has no zero-size arrays (a 0 in a shape means unknown), so "
               "an empty slice or a csr array with 0 rows raises in MXNet; gpunda returns the "
               "empty array as NumPy does"},
    {"tag": "mxnet-bug-unravel-nd", "status": "MXNet bug", "ops": {"_unravel_index"},
     "test": lambda prog, d, ref=None, got=None: len(prog["steps"][0][2]) > 1,
     "reason": "_unravel_index of an input with more than one dimension: MXNet's output is "
               "(len(shape), x.shape[0]) but its kernel walks all x.size indices and writes "
               "past it (heap corruption, or a process abort); gpunda raises"},
    {"tag": "mxnet-bug-index-copy-range", "status": "MXNet bug",
     "ops": {"_contrib_index_copy"}, "test": _index_copy_out_of_range,
     "reason": "index_copy with an index outside [0, rows): MXNet writes that row outside "
               "its output (other memory) with no check; gpunda raises"},
    {"tag": "mxnet-bug-softmax-nan", "status": "MXNet bug", "what": {"value"},
     "test": _softmax_of_nan,
     "reason": "MXNet's CPU softmax/log_softmax (built with fast math) read exp(NaN) as "
               "FLT_MAX: a NaN in a row leaves the row's other entries finite (softmax 0, "
               "log_softmax x - max - 88.72); gpunda's row is NaN, as NumPy's and IEEE's"},
    {"tag": "mxnet-bug-mean-grad-add", "status": "MXNet bug", "kind": {"autograd"},
     "what": {"value"}, "test": _mean_add_grad,
     "reason": "mean's backward with grad_req='add' adds the head gradient to the stored "
               "gradient and then divides the sum by the count (a second backward of "
               "mean(x), x of 4, gives 0.25 + 1/16 = 0.3125); gpunda accumulates 0.25 + 0.25"},
    {"tag": "mxnet-bug-unchecked-param", "status": "MXNet bug", "what": {"kind"},
     "detail": "array vs MXNetError",
     "ops": {"_contrib_index_array", "_contrib_interleaved_matmul_selfatt_qk",
             "_image_resize"},
     "reason": "MXNet computes with a parameter or dtype its kernel does not support and "
               "returns meaningless values: index_array with an axis >= ndim reads past the "
               "shape, interleaved_matmul_selfatt_qk with a last dimension not a multiple of "
               "3 * heads reads a strided subset (zeros when heads > dim), image.resize of "
               "int64 returns uninitialised memory (int32 is refused by OpenCV); gpunda raises"},
    {"tag": "interleaved-matmul-float", "status": DELIBERATE, "what": {"kind"},
     "detail": "MXNetError vs array",
     "ops": {"_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt",
             "_contrib_interleaved_matmul_encdec_qk", "_contrib_interleaved_matmul_encdec_valatt"},
     "steps": "float", "test": lambda prog, d, ref=None, got=None: any(
         st[0] == "input" and st[3] in ("float16", "float64") for st in prog["steps"]),
     "reason": "MXNet's CPU interleaved matmul kernels take float32 only (its GPU kernels take "
               "float16 too); gpunda takes every float dtype on every device"},
    {"tag": "cumsum-negative-axis", "status": DELIBERATE, "ops": {"_np_cumsum"},
     "what": {"kind"}, "detail": "MXNetError vs array",
     "test": lambda prog, d, ref=None, got=None: any(
         st[0] == "call" and isinstance(st[4], dict) and isinstance(st[4].get("axis"), int)
         and st[4]["axis"] < 0 for st in prog["steps"]),
     "reason": "np.cumsum with a negative axis: MXNet's range check admits it but the kernel "
               "then indexes the shape with the negative value and raises; gpunda counts it "
               "from the end as NumPy does"},
    {"tag": "np-matmul-float16", "status": DELIBERATE, "what": {"kind"},
     "detail": "MXNetError vs array", "ops": {"_npi_matmul", "_np_dot", "_npi_tensordot",
                                              "_npi_tensordot_int_axes"},
     "test": lambda prog, d, ref=None, got=None: any(
         st[0] == "input" and st[3] == "float16" for st in prog["steps"]),
     "reason": "MXNet's CPU np.matmul/dot/tensordot have no float16 kernel (its GPU ones do); "
               "gpunda computes float16 products on every device"},
    {"tag": "reshape-order-f", "status": DELIBERATE, "ops": {"_np_reshape"},
     "steps": '"order": "F"',
     "reason": "mx.np.reshape(a, s, order='F') silently reshapes in C order in MXNet 1.9.1 "
               "(a wrong answer); gpunda raises NotImplementedError once the shape is valid"},
    # -- deliberate (docs/compat.md, "Deliberate differences") ---------------------------
    {"tag": "mkldnn-cast", "status": DELIBERATE, "what": {"value"},
     "ops": {"amp_cast"},
     "reason": "MXNet's CPU wheel runs amp_cast to an integer type through MKL-DNN, which "
               "rounds to nearest and saturates; gpunda follows MXNet's reference (GPU) "
               "kernel, a truncating cast"},
    {"tag": "mxnet-bug-uninitialised", "status": DELIBERATE, "what": {"value"},
     "ops": {"_image_flip_left_right", "all_finite"},
     "reason": "MXNet bugs that return uninitialised memory: image.flip_left_right of float64 "
               "reads the wrong element type (garbage values), all_finite(init_output=False) "
               "never writes its output; gpunda computes the flip and writes the flag"},
    {"tag": "mxnet-bug-pad-constant", "status": DELIBERATE, "what": {"value"},
     "ops": {"_npi_pad"}, "steps": "constant_values",
     "reason": "MXNet's np.pad drops constant_values in mode='constant' (its Python front end "
               "discards the padded result and pads with 0); gpunda pads with the value as "
               "NumPy does"},
    {"tag": "decomposition-sign", "status": DELIBERATE, "what": {"value"},
     "ops": {"_npi_svd", "_npi_eig", "_npi_eigh", "_linalg_syevd", "_linalg_gelqf",
             "_npi_qr"},
     "reason": "singular/eigen vectors are unique only up to sign (LAPACK driver choice)"},
]

# ops whose float results come from long reductions or factorizations: looser tolerance
LOOSE_OPS = {"_linalg_potrf", "_linalg_potri", "_linalg_inverse", "_linalg_det",
             "_linalg_slogdet", "_linalg_gemm2", "_linalg_gemm", "Convolution",
             "Deconvolution", "FullyConnected", "dot", "batch_dot", "norm", "RNN"}


def is_loose(prog):
    """Whether ``prog`` gets the looser float tolerance."""
    return prog.get("op") in LOOSE_OPS or prog["kind"] in ("gluon", "autograd", "autograd-bn")


def _matches(rule, prog, d, text, ref, got):
    where, what, detail = d
    base = where.split("[")[0]
    return ((not rule.get("kind") or prog["kind"] in rule["kind"])
            and (not rule.get("ops") or prog.get("op") in rule["ops"])
            and (not rule.get("what") or what in rule["what"])
            and (not rule.get("where") or base in rule["where"])
            and (not rule.get("detail") or rule["detail"] in detail)
            and (not rule.get("steps") or rule["steps"] in text)
            and (not rule.get("test") or rule["test"](prog, d, ref, got)))


OPEN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "open.json")


def load_open():
    """Class keys (``class_key``) of the differences found and not yet explained or fixed:
    the ratchet written by ``python -m difftest replay --write-open``. A difference of
    one of these classes is tagged "open"; any other unexplained one fails the replay."""
    try:
        with open(OPEN_FILE) as f:
            return set(json.load(f))
    except FileNotFoundError:
        return set()


OPEN = load_open()


def _cascade(d):
    """A difference that only follows from an earlier one: a step read an entry that
    raised on one side only (``Skip``), so that step did not run there (whether or not
    it raised on the other side)."""
    return d[1] in ("kind", "missing", "extra", "error") and "Skip" in d[2]


def classify(prog, diffs, ref=None, got=None):
    """(unexplained diffs, tags of the rules that explained the others)."""
    if not diffs:
        return [], []
    text = json.dumps(prog["steps"])
    bad, tags = [], []
    for d in diffs:
        if _cascade(d):
            continue
        for rule in RULES:
            if _matches(rule, prog, d, text, ref, got):
                tags.append(rule["tag"])
                break
        else:
            if class_key(prog, d) in OPEN:
                tags.append("open")
            else:
                bad.append(d)
    return bad, tags


def class_key(prog, d):
    """A grouping key for an unexplained difference."""
    where, what, detail = d
    what_detail = detail if what in ("error", "kind", "dtype", "stype", "np-type") else ""
    return "%s %s %s %s %s" % (prog["kind"], prog.get("op", ""), where.split("[")[0], what,
                               what_detail)
