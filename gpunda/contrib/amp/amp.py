"""``mx.contrib.amp.amp``: MXNet's automatic mixed precision.

What works: the default op lists (``list_*``, MXNet 1.9.1's, from ``amp.lists``), the
``bfloat16`` dtype value, ``_cast_symbol_NDArray`` (an ``amp_cast`` where MXNet's rules
cast) and ``_get_fun_to_wrap``. The AMP mode itself (``init`` patching every op function to
run in float16/bfloat16, ``init_trainer``/``scale_loss``/``unscale``, the ``convert_*`` graph
passes) is not built: those names raise a GpundaError saying so (docs/compat.md).
"""
import numpy as np

from gpunda._core.not_built import define_stubs

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model",
           "convert_hybrid_block", "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops",
           "list_conditional_fp32_ops", "list_widest_type_cast", "list_loss_output_functions",
           "list_lp16_use_fp32_params", "convert_symbol"]

# MXNet's state flags (GluonNLP reads _amp_initialized at import): AMP is never on here
_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None

# MXNet's bfloat16 dtype: a NumPy record of one uint16 field named 'bfloat16'
bfloat16 = np.dtype([("bfloat16", np.uint16)])


def _cast_symbol_NDArray(s, dtype):  # noqa: N802 -- MXNet's name
    """``s`` cast to ``dtype`` with ``amp_cast`` where AMP would: any Symbol; an NDArray of
    another float type (float16/float32 on a GPU, bfloat16/float32 on the CPU); else ``s``."""
    from gpunda import ndarray, symbol
    if isinstance(s, symbol.Symbol):
        return symbol.amp_cast(s, dtype=dtype)
    if isinstance(s, ndarray.NDArray):
        on_cpu = s.context.device_type == "cpu"
        floats = (bfloat16, np.float32) if on_cpu else (np.float16, np.float32)
        if s.dtype != dtype and s.dtype in floats:
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
    if target_dtype != bfloat16:
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


define_stubs(globals(),
             functions=("init", "init_trainer", "scale_loss", "unscale", "convert_symbol",
                        "convert_model", "convert_hybrid_block", "convert_bucketing_module",
                        "_wrap_symbol_functions", "_wrap_loss_output_functions"),
             reason="gpunda does not build automatic mixed precision (AMP) yet; the op "
                    "lists (amp.list_*) and LossScaler work")
