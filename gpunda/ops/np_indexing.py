"""``mx.np`` boolean-mask assignment ops (MXNet's ``_npi_boolean_mask_assign_scalar`` /
``_npi_boolean_mask_assign_tensor``, reached as ``F.np._internal.boolean_mask_assign_*``):
``data[..., mask, ...] = value`` with the mask's axes starting at ``start_axis``.

The output is ``data`` with the masked positions replaced (MXNet writes it in place and
callers pass ``out=data``; gpunda also returns a fresh array when no ``out`` is given).
Both back-propagate zeros, as MXNet's ``MakeZeroGradNodes``.
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.ops.vision._detection_util import zero_grads
from gpunda.ops._util import require_same_dtype
from gpunda.ops.registry import OpDef, Param, register

_SCALAR = "_npi_boolean_mask_assign_scalar"
_TENSOR = "_npi_boolean_mask_assign_tensor"


def _check_mask(name, dshape, mshape, start_axis):
    if not 0 <= start_axis <= len(dshape) - len(mshape):
        raise GpundaError(f"Operator {name}: start_axis={start_axis} does not fit a mask of "
                          f"{len(mshape)} dimensions into data of shape {tuple(dshape)}")
    for i, m in enumerate(mshape):
        d = dshape[i + start_axis]
        if d != m:
            raise GpundaError(f"Operator {name}: boolean index did not match indexed array "
                              f"along dimension {i + start_axis}; dimension is {d} but "
                              f"corresponding boolean dimension is {m}")


def _masked_key(xp, mask, start_axis):
    m = mask if mask.dtype.kind == "b" else mask != 0     # MXNet counts nonzero as true
    return (slice(None),) * start_axis + (m,)


def _assign_scalar(xp, p, data, mask):
    _check_mask(_SCALAR, data.shape, mask.shape, p.start_axis)
    out = data.copy()
    out[_masked_key(xp, mask, p.start_axis)] = p.value
    return out


def _assign_tensor(xp, p, data, mask, value):
    _check_mask(_TENSOR, data.shape, mask.shape, p.start_axis)
    require_same_dtype(_TENSOR, ("data", "value"), data, value)
    key = _masked_key(xp, mask, p.start_axis)
    out = data.copy()
    target = out[key].shape
    if value.size != 1:
        # the value's axes line up with the selection: data's leading axes, one axis for
        # the masked positions (their count, or 1 to broadcast), data's trailing axes
        lead = len(target) - value.ndim
        if value.ndim > len(target) or (value.ndim == len(target) and value.shape[p.start_axis]
                                        not in (1, target[p.start_axis])):
            raise GpundaError(f"Operator {_TENSOR}: boolean array indexing assignment cannot "
                              f"assign a value of shape {tuple(value.shape)} to the "
                              f"{target[p.start_axis] if target else 0} positions where the "
                              f"mask is true (selection shape {tuple(target)})")
        value = value.reshape((1,) * lead + tuple(value.shape))
    else:
        value = value.reshape(())
    out[key] = value
    return out


def _infer(p, in_shapes):
    data, mask = in_shapes[0], in_shapes[1]
    if data is None:
        return None
    if mask is not None:
        _check_mask(_SCALAR if len(in_shapes) == 2 else _TENSOR, data, mask, p.start_axis)
    return list(in_shapes), [tuple(data)]


_START = Param("start_axis", "int", 0, "the data axis the mask's first axis indexes")
_HOST = "a boolean mask's count of true positions is read on the host"

register(OpDef(_SCALAR, _assign_scalar, inputs=("data", "mask"),
               params=[Param("value", "float", doc="the value the masked positions take"),
                       _START],
               gradient=zero_grads, save=("inputs",), infer_shape=_infer, hidden=True,
               capture=_HOST, family="np_indexing",
               doc="``data`` with ``data[mask] = value`` (mask axes from start_axis)."))
register(OpDef(_TENSOR, _assign_tensor, inputs=("data", "mask", "value"), params=[_START],
               gradient=zero_grads, save=("inputs",), infer_shape=_infer, hidden=True,
               capture=_HOST, family="np_indexing",
               doc="``data`` with ``data[mask] = value``; value broadcasts over the selection."))
