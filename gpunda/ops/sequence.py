"""Sequence ops over padded batches (MXNet's SequenceMask, SequenceLast, SequenceReverse).

``data`` has the time axis at ``axis`` (0: (T, N, ...), 1: (N, T, ...)); with
``use_sequence_length`` the input ``sequence_length`` (N,) gives each sequence's valid
length, otherwise every sequence is T long. All three are linear in ``data``, so each
gradient is the adjoint op: a mask masks, a reversal reverses, picking the last step
scatters back into it.
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

_PARAMS = [Param("use_sequence_length", "bool", False,
                 "read each sequence's length from the sequence_length input"),
           Param("axis", "int", 0, "the time axis (0 or 1; the batch axis is the other one)")]


def _inputs(p):
    return ("data", "sequence_length") if p.use_sequence_length else ("data",)


def _lengths(xp, opname, p, data, rest):
    """Valid lengths (N,) as int64, or None when every sequence is full length."""
    if p.axis not in (0, 1):
        raise GpundaError(f"Operator {opname}: axis={p.axis} must be 0 or 1")
    if data.ndim < 2:
        raise GpundaError(f"Operator {opname}: data must have a time and a batch axis, got "
                          f"shape {tuple(data.shape)}")
    if not p.use_sequence_length:
        return None
    lengths = rest[0]
    n = data.shape[1 - p.axis]
    if lengths.shape != (n,):
        raise GpundaError(f"Operator {opname}: sequence_length has shape {tuple(lengths.shape)}, "
                          f"expected ({n},) (the batch size of data {tuple(data.shape)})")
    return lengths.astype("int64")


def _time_mask(xp, data, lengths, axis):
    """Boolean mask broadcastable to data: True where the step is inside its sequence."""
    t = data.shape[axis]
    steps = xp.arange(t)
    valid = steps[:, None] < lengths[None, :] if axis == 0 else lengths[:, None] > steps[None, :]
    return valid.reshape(valid.shape + (1,) * (data.ndim - 2))


def _mask(xp, p, data, *rest):
    lengths = _lengths(xp, "SequenceMask", p, data, rest)
    if lengths is None:
        return data.copy()
    keep = _time_mask(xp, data, lengths, p.axis)
    return xp.where(keep, data, xp.asarray(p.value, dtype=data.dtype))


def _mask_grad(F, p, ins, outs, og):
    if not p.use_sequence_length:
        return [og[0]]
    return [F.SequenceMask(og[0], ins[1], use_sequence_length=True, value=0.0, axis=p.axis),
            None]


register(OpDef(
    "SequenceMask", _mask, inputs=_inputs,
    params=_PARAMS + [Param("value", "float", 0.0, "the value written past each length")],
    gradient=_mask_grad, save=("inputs",), no_grad_inputs=("sequence_length",),
    family="sequence",
    doc="Set the steps past each sequence's length to value (data unchanged without "
        "use_sequence_length)."))


def _last_index(xp, data, lengths, axis):
    t = data.shape[axis]
    n = data.shape[1 - axis]
    if lengths is None:
        return xp.full((n,), t - 1, dtype="int64")
    return xp.clip(lengths - 1, 0, t - 1)


def _last(xp, p, data, *rest):
    lengths = _lengths(xp, "SequenceLast", p, data, rest)
    idx = _last_index(xp, data, lengths, p.axis)
    batch = xp.arange(data.shape[1 - p.axis])
    return data[idx, batch] if p.axis == 0 else data[batch, idx]


def _last_grad(F, p, ins, outs, og):
    g = F._sequence_last_scatter(og[0], *ins[1:], use_sequence_length=p.use_sequence_length,
                                 axis=p.axis, length=ins[0].shape[p.axis])
    return [g, None] if p.use_sequence_length else [g]


register(OpDef(
    "SequenceLast", _last, inputs=_inputs, params=_PARAMS, gradient=_last_grad,
    save=("inputs",), no_grad_inputs=("sequence_length",), family="sequence",
    doc="The last valid step of every sequence: (N, ...) from (T, N, ...) data."))


def _scatter(xp, p, g, *rest):
    shape = list(g.shape)
    shape.insert(p.axis, p.length)
    out = xp.zeros(shape, dtype=g.dtype)
    lengths = rest[0].astype("int64") if p.use_sequence_length else None
    idx = _last_index(xp, out, lengths, p.axis)
    batch = xp.arange(g.shape[0])
    if p.axis == 0:
        out[idx, batch] = g
    else:
        out[batch, idx] = g
    return out


register(OpDef(
    "_sequence_last_scatter", _scatter, inputs=_inputs,
    params=_PARAMS + [Param("length", "int", doc="the time axis' length")],
    gradient=lambda F, p, ins, outs, og: [F.SequenceLast(
        og[0], *ins[1:], use_sequence_length=p.use_sequence_length, axis=p.axis)] +
    ([None] if p.use_sequence_length else []),
    save=("inputs",), no_grad_inputs=("sequence_length",), hidden=True, family="sequence",
    doc="SequenceLast's adjoint: each row written at its sequence's last step, zeros elsewhere."))


def _reverse(xp, p, data, *rest):
    if p.axis != 0:
        raise GpundaError(f"Operator SequenceReverse: axis={p.axis} is not supported; MXNet "
                          f"reverses along axis 0 only")
    lengths = _lengths(xp, "SequenceReverse", p, data, rest)
    t, n = data.shape[:2]
    steps = xp.arange(t)[:, None]
    if lengths is None:
        idx = xp.broadcast_to(t - 1 - steps, (t, n))
    else:
        last = lengths[None, :] - 1
        idx = xp.where(steps <= last, last - steps, steps)
    return data[idx, xp.arange(n)[None, :]]


register(OpDef(
    "SequenceReverse", _reverse, inputs=_inputs, params=_PARAMS,
    gradient=lambda F, p, ins, outs, og: [F.SequenceReverse(
        og[0], *ins[1:], use_sequence_length=p.use_sequence_length, axis=p.axis)] +
    ([None] if p.use_sequence_length else []),
    save=("inputs",), no_grad_inputs=("sequence_length",), family="sequence",
    doc="Reverse each sequence's valid steps along axis 0; padding stays in place."))
