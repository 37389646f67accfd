"""``mx.contrib.amp.amp``: MXNet's automatic mixed precision.

``init`` replaces the op functions of ``mx.nd`` and ``mx.sym`` (and their ``op``,
``_internal``, ``contrib``, ``linalg``, ``sparse``, ``image``, ``random`` modules) named in
the op lists (``list_*``, MXNet 1.9.1's) by wrappers that cast their inputs: to the target
type for the low-precision ops, to float32 for the float32 ops and for the conditional ones
when a parameter has a listed value, to the widest input type for the widest-type ops. Until
``init`` is called nothing is replaced, so AMP costs nothing when it is off. ``init_trainer``,
``scale_loss`` and ``unscale`` give a Gluon Trainer dynamic loss scaling (``LossScaler``;
the Trainer skips a step whose gradients overflow). ``convert_symbol``/``convert_model``/
``convert_hybrid_block``/``convert_bucketing_module`` rewrite a float32 graph for mixed
precision inference (``_pass.py``).

gpunda computes float16 on the CPU too (MXNet's CPU kernels of FullyConnected/Convolution
refuse it), and bfloat16 on any CPU and GPU (MXNet's needs oneDNN on an AVX512 CPU): an op
given bfloat16 computes in float32 and rounds its result (NOTE [bfloat16 compute] in
gpunda/ops/_bf16.py); the arrays hold ml_dtypes' bfloat16, which ``bfloat16`` here (MXNet's
record spelling) names wherever gpunda takes a dtype.
"""
import contextlib
import logging

import numpy as np

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model",
           "convert_hybrid_block", "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops",
           "list_conditional_fp32_ops", "list_widest_type_cast", "list_loss_output_functions",
           "list_lp16_use_fp32_params", "convert_symbol"]

# MXNet's state flags (GluonNLP reads _amp_initialized at import)
_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None

def __getattr__(name):
    # MXNet's amp.py imports its ``lists`` package (``amp.amp.lists.symbol_bf16``); loaded on
    # first use here
    if name == "lists":
        from gpunda.contrib.amp import lists
        return lists
    raise AttributeError(f"module 'mxnet.contrib.amp.amp' has no attribute {name!r}")


# MXNet's bfloat16 dtype, a NumPy record of one uint16 field named 'bfloat16': what a
# bfloat16 NDArray's ``dtype`` is, and a name of ml_dtypes' bfloat16 wherever gpunda takes one
bfloat16 = np.dtype([("bfloat16", np.uint16)])


def _bf16():
    from gpunda._core import bf16 as _core_bf16
    return _core_bf16.dtype()


def _cast_symbol_NDArray(s, dtype):  # noqa: N802 -- MXNet's name
    """``s`` cast to ``dtype`` with ``amp_cast`` where AMP would: any Symbol; an NDArray of
    another float type (float16/float32 on a GPU, bfloat16/float32 on the CPU); else ``s``."""
    from gpunda import ndarray, symbol
    if isinstance(s, symbol.Symbol):
        return symbol.amp_cast(s, dtype=dtype)
    if isinstance(s, ndarray.NDArray):
        from gpunda.base import np_dtype
        on_cpu = s.context.device_type == "cpu"
        t = np.dtype(s.dtype)
        low = _is_bf16(t) if on_cpu else t == np.float16
        if t != np_dtype(dtype) and (low or t == np.float32):
            return ndarray.amp_cast(s, dtype=dtype)
    return s


def _get_fun_to_wrap(name, module, submodule_dict):
    """(function name, module holding it) for op ``name`` under ``module`` (mx.nd or mx.sym):
    a prefixed op lives in its submodule (``submodule_dict[prefix]``) without the prefix,
    except ``_random_`` ops not ending in ``_like``, which stay in ``_internal``; other
    ``_``-names live in ``_internal``."""
    from gpunda.base import _get_op_name_prefix
    internal = getattr(module, "_internal")
    prefix = _get_op_name_prefix(name)
    if prefix:
        if prefix != "_random_" or name.endswith("_like"):
            return name[len(prefix):], submodule_dict[prefix]
        return name, internal
    if name.startswith("_"):
        return name, internal
    return name, module


def _lists(target_dtype):
    from gpunda.base import GpundaAssertionError
    from gpunda.contrib.amp import lists
    if target_dtype in ("float16", np.float16):
        return lists.symbol_fp16, True
    if not _is_bf16(target_dtype):
        raise GpundaAssertionError(f"amp: target_dtype={target_dtype!r} is not supported: "
                                   f"'float16' or amp.bfloat16")
    return lists.symbol_bf16, False


def list_lp16_ops(target_dtype):
    """The ops AMP runs in the low precision ``target_dtype`` ('float16' or bfloat16)."""
    mod, fp16 = _lists(target_dtype)
    return mod.FP16_FUNCS if fp16 else mod.BF16_FUNCS


def list_fp32_ops(target_dtype):
    """The ops AMP keeps in float32."""
    return _lists(target_dtype)[0].FP32_FUNCS


def list_lp16_fp32_ops(target_dtype):
    """The ops that run in either precision (the widest input type wins)."""
    mod, fp16 = _lists(target_dtype)
    return mod.FP16_FP32_FUNCS if fp16 else mod.BF16_FP32_FUNCS


def list_conditional_fp32_ops(target_dtype):
    """(op, parameter, values) triples that put an op into float32."""
    return _lists(target_dtype)[0].CONDITIONAL_FP32_FUNCS


def list_widest_type_cast(target_dtype):
    """The ops whose inputs AMP casts to their widest type."""
    return _lists(target_dtype)[0].WIDEST_TYPE_CASTS


def list_loss_output_functions(target_dtype):
    """The loss output ops AMP scales the gradient of."""
    return _lists(target_dtype)[0].LOSS_OUTPUT_FUNCTIONS


def list_lp16_use_fp32_params(target_dtype):
    """Ops whose given parameters stay float32 under bfloat16 (None for float16)."""
    mod, fp16 = _lists(target_dtype)
    return None if fp16 else mod.BF16_USE_FP32_PARAMS


# -- init: the op wrappers -------------------------------------------------------------------

def _copy_meta(new, f):
    new.__name__, new.__qualname__ = f.__name__, getattr(f, "__qualname__", f.__name__)
    new.__module__, new.__doc__ = f.__module__, f.__doc__
    new.__wrapped__ = f
    return new


def _ndarray_wrapper(f, target_dtype, fp32_param=None, cond_arg=None):
    """``f`` with its NDArray inputs cast to ``target_dtype`` (``_cast_symbol_NDArray``'s
    rule), except the inputs ``fp32_param`` marks; with ``cond_arg`` = (parameter, values)
    only when that keyword parameter has one of the values. An ``out=`` array is where the
    result goes, not an input: it is never cast."""
    def cast(v):
        return _cast_symbol_NDArray(v, target_dtype)

    def new_fun(*args, **kwargs):
        if cond_arg is not None and kwargs.get(cond_arg[0], _MISSING) not in cond_arg[1]:
            return f(*args, **kwargs)
        if fp32_param:
            args = [x if i < len(fp32_param) and fp32_param[i] else cast(x)
                    for i, x in enumerate(args)]
            kwargs = {k: v if k in fp32_param or k == "out" else cast(v)
                      for k, v in kwargs.items()}
        else:
            args = [cast(x) for x in args]
            kwargs = {k: v if k == "out" else cast(v) for k, v in kwargs.items()}
        return f(*args, **kwargs)
    return _copy_meta(new_fun, f)


def _symbol_wrapper(f, target_dtype, fp32_param=None, cond_arg=None):
    """``f`` (a ``sym`` op function) whose node reads its inputs through ``amp_cast`` to
    ``target_dtype``, except auxiliary states and the inputs ``fp32_param`` marks."""
    from gpunda.symbol.symbol import Symbol, _Node

    def new_fun(*args, **kwargs):
        if cond_arg is not None and kwargs.get(cond_arg[0], _MISSING) not in cond_arg[1]:
            return f(*args, **kwargs)
        sym = f(*args, **kwargs)
        node = sym._outputs[0][0]
        if node.op is None or not node.inputs:
            return sym
        aux = set(node.aux_positions())
        inputs = []
        for k, (c, i) in enumerate(node.inputs):
            keep = k in aux or (fp32_param and k < len(fp32_param) and fp32_param[k])
            inputs.append((c, i) if keep else
                          _cast_symbol_NDArray(Symbol([(c, i)]), target_dtype)._outputs[0])
        new = _Node(node.op, node.name, dict(node.attrs), inputs, node.p)
        return Symbol([(new, i) for i in range(node.nvis)])
    return _copy_meta(new_fun, f)


def _widest_wrapper(f, target_dtype):
    """``f`` with its array inputs at their widest type: NDArrays of the target type become
    float32 when another input is float32; Symbols go through one ``amp_multicast``."""
    from gpunda.ndarray import NDArray, amp_cast
    from gpunda.symbol import Symbol, amp_multicast

    def new_fun(*args, **kwargs):
        args = list(args)
        found = [(args, i, a) for i, a in enumerate(args) if isinstance(a, (Symbol, NDArray))]
        found += [(kwargs, k, a) for k, a in kwargs.items()
                  if k != "out" and isinstance(a, (Symbol, NDArray))]
        if any(isinstance(a, Symbol) for _, _, a in found):
            cast = amp_multicast(*[a for _, _, a in found], num_outputs=len(found))
            for (where, key, _), c in zip(found, cast):
                where[key] = c
        else:
            widest = target_dtype
            if any(a.dtype == np.float32 for _, _, a in found):
                widest = np.float32
            for where, key, a in found:
                if a.dtype != widest and a.dtype == target_dtype:
                    where[key] = amp_cast(a, dtype=widest)
        return f(*args, **kwargs)
    return _copy_meta(new_fun, f)


_MISSING = object()


def _wrap_symbol_functions(module, target_dtype, target_precision_ops=None,
                           conditional_fp32_ops=None, fp32_ops=None):
    """Replace the listed op functions of ``module`` (gpunda.ndarray or gpunda.symbol) and
    of its op submodules by the AMP wrappers (MXNet's function of this name)."""
    from gpunda import base, symbol
    wrapper = _symbol_wrapper if module is symbol else _ndarray_wrapper
    submodules = {prefix: getattr(module, prefix[1:-1]) for prefix in base._OP_NAME_PREFIX_LIST}

    def place(name, make, default_list):
        fun_name, where = _get_fun_to_wrap(name, module, submodules)
        f = getattr(where, fun_name, None)
        if f is None:
            if default_list:
                return      # an op of MXNet's lists that gpunda does not have: nothing to cast
            raise AttributeError(f"amp.init: module {where.__name__!r} has no operator "
                                 f"{fun_name!r} to wrap")
        setattr(where, fun_name, make(f, fun_name))
        if where is module:
            setattr(module.op, fun_name, make(f, fun_name))

    fp32_params = list_lp16_use_fp32_params(target_dtype) or {}
    for name in (target_precision_ops if target_precision_ops is not None
                 else list_lp16_ops(target_dtype)):
        place(name, lambda f, fun_name: wrapper(f, target_dtype,
                                                fp32_param=fp32_params.get(fun_name)),
              target_precision_ops is None)
    for name in fp32_ops if fp32_ops is not None else list_fp32_ops(target_dtype):
        place(name, lambda f, _: wrapper(f, np.float32), fp32_ops is None)
    for name, arg, values in (conditional_fp32_ops if conditional_fp32_ops is not None
                              else list_conditional_fp32_ops(target_dtype)):
        place(name, lambda f, _, c=(arg, values): wrapper(f, np.float32, cond_arg=c),
              conditional_fp32_ops is None)
    for name in list_widest_type_cast(target_dtype):
        place(name, lambda f, _: _widest_wrapper(f, target_dtype), True)


def _wrap_loss_output_functions(module, ls, target_dtype):
    """The loss output ops of ``module``: on NDArrays their ``grad_scale`` is multiplied by
    the loss scale of ``ls``; on Symbols a warning says dynamic loss scaling does not apply."""
    from gpunda import ndarray

    def scaling(f):
        def new_fun(*args, **kwargs):
            kwargs["grad_scale"] = (kwargs["grad_scale"] * ls.loss_scale
                                    if "grad_scale" in kwargs else ls.loss_scale)
            return f(*args, **kwargs)
        return _copy_meta(new_fun, f)

    def warning(f):
        def new_fun(*args, **kwargs):
            logging.warning("%s does not support dynamic loss scaling in symbolic and "
                            "hybridized execution.", f.__name__)
            return f(*args, **kwargs)
        return _copy_meta(new_fun, f)

    make = scaling if module is ndarray else warning
    for name in list_loss_output_functions(target_dtype):
        f = getattr(module, name, None)
        if f is not None:
            setattr(module, name, make(f))


def init(target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None):
    """Turn AMP on: the listed ops of ``mx.nd`` and ``mx.sym`` cast their inputs to
    ``target_dtype`` ('float16' or 'bfloat16'), to float32, or to their widest input type
    (the op lists, or the given ones). Call it before building the model; a second call does
    nothing, as in MXNet."""
    from gpunda.base import GpundaAssertionError
    global _amp_initialized, _loss_scaler
    if _amp_initialized:
        return
    if not _is_lp16(target_dtype):
        raise GpundaAssertionError(f"amp.init: target_dtype={target_dtype!r}: AMP supports only "
                                   f"float16 or bfloat16 as a target_dtype")
    from gpunda import ndarray, symbol
    from gpunda.contrib.amp.loss_scaler import LossScaler
    _amp_initialized = True
    logging.info("Using AMP")
    target_dtype = _bf16() if _is_bf16(target_dtype) else np.dtype(target_dtype)
    _wrap_symbol_functions(symbol, target_dtype, target_precision_ops, conditional_fp32_ops,
                           fp32_ops)
    _wrap_symbol_functions(ndarray, target_dtype, target_precision_ops, conditional_fp32_ops,
                           fp32_ops)
    _loss_scaler = LossScaler()
    _wrap_loss_output_functions(ndarray, _loss_scaler, target_dtype)
    _wrap_loss_output_functions(symbol, _loss_scaler, target_dtype)


def _is_bf16(t):
    """Whether ``t`` names bfloat16: 'bfloat16', MXNet's record dtype, ml_dtypes' dtype or type."""
    from gpunda._core import bf16 as _core_bf16
    return _core_bf16.is_name(t) or (isinstance(t, np.dtype) and _core_bf16.is_bf16(t))


def _is_lp16(t):
    if _is_bf16(t):
        return True
    return (isinstance(t, str) and t == "float16") or t is np.float16 or \
        (isinstance(t, np.dtype) and t == np.float16)


# -- training: dynamic loss scaling ------------------------------------------------------

def _trainer_only(optimizer_or_trainer):
    from gpunda import optimizer as opt
    from gpunda.gluon.trainer import Trainer
    if isinstance(optimizer_or_trainer, Trainer):
        return optimizer_or_trainer
    if isinstance(optimizer_or_trainer, opt.Optimizer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer")
    raise TypeError(f"optimizer_or_trainer should be a Gluon Trainer or an optimizer, instead "
                    f"is {type(optimizer_or_trainer)}")


def init_trainer(optimizer_or_trainer):
    """Give a Gluon Trainer dynamic loss scaling: the first trainer shares ``init``'s loss
    scaler (the one the NDArray loss outputs read), later ones get their own."""
    from gpunda.base import GpundaAssertionError
    from gpunda.contrib.amp.loss_scaler import LossScaler
    global _amp_loss_scale_initialized
    if not _amp_initialized:
        raise GpundaAssertionError("AMP not initialized, did you forget to call amp.init()?")
    if not _amp_loss_scale_initialized:
        _amp_loss_scale_initialized = True
        scaler = _loss_scaler
    else:
        scaler = LossScaler()
    trainer = _trainer_only(optimizer_or_trainer)
    trainer._amp_loss_scaler = scaler
    trainer._amp_original_scale = trainer._scale


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Context giving ``loss`` (or each loss of a list) times the current loss scale, and
    setting the trainer to divide the gradients by it in its next step."""
    from gpunda.base import GpundaAssertionError
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise GpundaAssertionError("Loss scaler is not initialized, did you forget to call "
                                   "amp.init_trainer()?")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [one * scaler.loss_scale for one in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer):
    """Divide the gradients by the loss scale now (for clipping them before ``step``); the
    trainer's next step then leaves them unscaled."""
    trainer = _trainer_only(optimizer_or_trainer)
    for p in trainer._params:
        if p._grad is not None:
            for g in p._grad:
                g[:] *= trainer._scale
    trainer._scale = 1.


# -- inference: converting float32 graphs ---------------------------------------------------

def _check_names(value, what):
    from gpunda.base import GpundaAssertionError
    if not isinstance(value, list):
        raise GpundaAssertionError(f"amp.convert_symbol: {what} should be a list, got "
                                   f"{type(value).__name__}")


def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """``sym``, a float32 graph, with amp_cast/amp_multicast nodes where the op lists (or the
    given ones) say, for ``target_dtype`` 'float16' or 'bfloat16' (MXNet's ReducePrecision
    pass). ``data_names``: the inputs that are data (default: those without ``__dtype__``);
    the others get a ``__dtype__`` attribute. ``cast_optional_params``: parameters feeding a
    low-precision op are not cast but declared in the low precision."""
    from gpunda.base import GpundaAssertionError
    from gpunda.contrib.amp._pass import reduce_precision
    from gpunda.symbol import Symbol
    if not isinstance(sym, Symbol):
        raise GpundaAssertionError("First argument to convert_symbol should be Symbol")
    if target_dtype not in ("float16", "bfloat16"):
        raise GpundaAssertionError(f"amp.convert_symbol: target_dtype={target_dtype!r}: only "
                                   f"float16 and bfloat16 are supported currently")
    lists_dtype = _bf16() if target_dtype == "bfloat16" else target_dtype
    for value, what in ((target_dtype_ops, "target_dtype_ops"), (fp32_ops, "fp32_ops"),
                        (conditional_fp32_ops, "conditional_fp32_ops"),
                        (excluded_sym_names, "excluded_sym_names")):
        if value is not None:
            _check_names(value, what)
    if target_dtype_ops is None:
        target_dtype_ops = list_lp16_ops(lists_dtype)
    if fp32_ops is None:
        fp32_ops = list_fp32_ops(lists_dtype)
    if conditional_fp32_ops is None:
        conditional_fp32_ops = list_conditional_fp32_ops(lists_dtype)
    excluded_sym_names = excluded_sym_names or []
    conditional = {}
    for entry in conditional_fp32_ops:
        if not (isinstance(entry[0], str) and isinstance(entry[1], str)
                and isinstance(entry[2], list)):
            raise GpundaAssertionError("conditional_fp32_ops should be a list of "
                                       "(str, str, list of str)")
        conditional.setdefault(entry[0], {}).setdefault(entry[1], []).extend(entry[2])
    cond_names = [entry[0] for entry in conditional_fp32_ops]
    for (a, an), (b, bn) in (((target_dtype_ops, "target_dtype_ops"), (fp32_ops, "fp32_ops")),
                             ((target_dtype_ops, "target_dtype_ops"),
                              (cond_names, "conditional_fp32_ops")),
                             ((fp32_ops, "fp32_ops"), (cond_names, "conditional_fp32_ops"))):
        common = set(a) & set(b)
        if common:
            raise GpundaAssertionError(f"Ops cannot be in two or more lists. Common ops in "
                                       f"{an} and {bn} {common}")
    known = set(list_lp16_ops(lists_dtype) + list_fp32_ops(lists_dtype)
                + list_lp16_fp32_ops(lists_dtype)
                + [c[0] for c in list_conditional_fp32_ops(lists_dtype)])
    illegal = set(target_dtype_ops + fp32_ops + cond_names) - known
    if illegal:
        raise GpundaAssertionError(f"amp.convert_symbol: ops {sorted(illegal)} are in none of "
                                   f"amp.list_lp16_ops, list_fp32_ops, list_lp16_fp32_ops, "
                                   f"list_conditional_fp32_ops ({target_dtype})")
    attrs = sym.attr_dict()
    inputs = sym.list_inputs()
    if data_names is None:
        data_names = [n for n in inputs if "__dtype__" not in attrs.get(n, {})]
    model_params = list(set(inputs) - set(data_names))
    return reduce_precision(sym, target_dtype, target_dtype_ops, fp32_ops,
                            list_widest_type_cast(lists_dtype), conditional,
                            excluded_sym_names, data_names, model_params,
                            cast_optional_params)


def _to_declared_dtype(arr, code):
    """``arr`` in the dtype of MXNet type code ``code`` (a ``__dtype__`` value)."""
    from gpunda.ndarray.ndarray import _DTYPE_MX_TO_NP
    typ = _DTYPE_MX_TO_NP[int(code)]
    if _is_bf16(typ):
        return _cast_symbol_NDArray(arr, _bf16())
    return arr.astype(typ)


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None,
                  fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                  cast_optional_params=False):
    """(converted symbol, arg_params, aux_params): ``convert_symbol`` with the parameters as
    the model's non-data inputs, each parameter cast to its ``__dtype__``."""
    from gpunda.base import GpundaAssertionError
    from gpunda.symbol import Symbol
    if target_dtype not in ("float16", "bfloat16"):
        raise GpundaAssertionError(f"amp.convert_model: target_dtype={target_dtype!r}: only "
                                   f"float16 and bfloat16 are supported currently")
    if not isinstance(sym, Symbol):
        raise GpundaAssertionError("First argument to convert_model should be Symbol")
    if not isinstance(arg_params, dict):
        raise GpundaAssertionError("Second argument to convert_model should be a dict of name "
                                   "to ndarray")
    if not isinstance(aux_params, dict):
        raise GpundaAssertionError("Third argument to convert_model should be a dict of name "
                                   "to ndarray")
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    sym = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                         excluded_sym_names, data_names, cast_optional_params)
    attrs = sym.attr_dict()
    for names, table in ((sym.list_arguments(), arg_params),
                         (sym.list_auxiliary_states(), aux_params)):
        for name in names:
            code = attrs.get(name, {}).get("__dtype__")
            if code is not None and code != "-1" and name in table:
                table[name] = _to_declared_dtype(table[name], code)
    return sym, arg_params, aux_params


def convert_hybrid_block(block, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params=False):
    """A SymbolBlock running ``block`` (hybridized and run once) in mixed precision: its
    graph converted by ``convert_symbol``, its parameters cast to their ``__dtype__`` and
    loaded on ``ctx`` (MXNet's default: gpu(0))."""
    from gpunda.base import GpundaAssertionError
    from gpunda.context import gpu
    from gpunda.gluon import HybridBlock, SymbolBlock
    if ctx is None:
        ctx = gpu(0)
    if not isinstance(block, HybridBlock):
        raise GpundaAssertionError("block input should be a HybridBlock")
    if not block._cached_graph:
        raise RuntimeError("Please first call block.hybridize() and then run forward with "
                           "this block at least once before calling export.")
    inputs, sym = block._cached_graph
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                               conditional_fp32_ops, excluded_sym_names,
                               data_names=[i.name for i in inputs],
                               cast_optional_params=cast_optional_params)
    arg_names = set(converted.list_arguments())
    aux_names = set(converted.list_auxiliary_states())
    attrs = converted.attr_dict()
    arrays = {}
    for name, param in block.collect_params().items():
        if name not in arg_names and name not in aux_names:
            continue        # a parameter the graph does not read
        key = ("arg:" if name in arg_names else "aux:") + name
        arrays[key] = param._reduce()
        code = attrs.get(name, {}).get("__dtype__")
        if code is not None and code != "-1":
            arrays[key] = _to_declared_dtype(arrays[key], code)
    ret = SymbolBlock(converted, inputs)
    for name, param in ret.collect_params().items():
        for key in ("arg:" + name, "aux:" + name):
            if key in arrays and param.dtype != arrays[key].dtype:
                param.cast(arrays[key].dtype)
    ret.collect_params().load_dict(arrays, ctx=ctx)
    return ret


def convert_bucketing_module(bucketing_mod, target_dtype="float16", target_dtype_ops=None,
                             fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                             cast_optional_params=False):
    """A BucketingModule whose bucket symbols are converted by ``convert_model`` (parameters
    of the current module, cast as the last bucket's conversion declares)."""
    from gpunda.base import GpundaAssertionError
    from gpunda.module import BucketingModule
    if not isinstance(bucketing_mod, BucketingModule):
        raise GpundaAssertionError("module should be instance of bucketing module")
    if not bucketing_mod._buckets:
        raise GpundaAssertionError("Bucketing Module should not be empty")
    if not bucketing_mod.params_initialized:
        raise GpundaAssertionError("bucketing_mod params should be initialized for mixed "
                                   "precision conversion")
    arg_params = bucketing_mod._curr_module._arg_params
    aux_params = bucketing_mod._curr_module._aux_params
    symbols = {}
    for key, mod in bucketing_mod._buckets.items():
        symbols[key], arg_params, aux_params = convert_model(
            mod._symbol, arg_params, aux_params, target_dtype=target_dtype,
            target_dtype_ops=target_dtype_ops, fp32_ops=fp32_ops,
            conditional_fp32_ops=conditional_fp32_ops, excluded_sym_names=excluded_sym_names,
            cast_optional_params=cast_optional_params)
    return BucketingModule.load_dict(
        symbols, sym_gen=bucketing_mod._sym_gen, arg_params=arg_params, aux_params=aux_params,
        default_bucket_key=bucketing_mod._default_bucket_key, logger=bucketing_mod.logger,
        context=bucketing_mod._context, work_load_list=bucketing_mod._work_load_list,
        fixed_param_names=bucketing_mod._fixed_param_names,
        state_names=bucketing_mod._state_names, group2ctxs=bucketing_mod._group2ctxs,
        compression_params=bucketing_mod._compression_params)
