"""Connectionist temporal classification loss (MXNet's CTCLoss / ctc_loss).

``data`` (T, N, C) holds unnormalised activations; a softmax over C gives the
per-step class probabilities. ``label`` (N, L) holds each sequence's targets,
padded (with 0 when ``blank_label='first'``, -1 when ``'last'``) unless
``label_lengths`` gives the lengths; ``data_lengths`` gives each sequence's
number of valid steps. The loss is ``-log p(label | data)`` summed over every
alignment, by the forward (alpha) recursion over the label with blanks
interleaved. As in MXNet the gradient with respect to ``data`` is computed in
the same pass, from the alpha and beta recursions (softmax minus the posterior
occupancy of each class), and kept as a hidden second output that the gradient
rule scales by the head gradient; that makes the op once-differentiable.
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.ops._util import not_differentiable
from gpunda.ops.registry import OpDef, Param, register

_PARAMS = [
    Param("use_data_lengths", "bool", False, "read each sequence's steps from data_lengths"),
    Param("use_label_lengths", "bool", False,
          "read each label's length from label_lengths instead of the padding value"),
    Param("blank_label", "enum", "first", "which class is the blank: 0 ('first') or C-1 "
          "('last')", choices=("first", "last")),
]


def _inputs(p):
    names = ["data", "label"]
    if p.use_data_lengths:
        names.append("data_lengths")
    if p.use_label_lengths:
        names.append("label_lengths")
    return names


def _check_shapes(data, label, rest, p):
    if data.ndim != 3:
        raise GpundaError(f"Operator CTCLoss: data must be 3-D (T, N, C), got shape "
                          f"{tuple(data.shape)}")
    if label.ndim != 2:
        raise GpundaError(f"Operator CTCLoss: label must be 2-D (N, L), got shape "
                          f"{tuple(label.shape)}")
    t, n, _ = data.shape
    if label.shape[0] != n:
        raise GpundaError(f"Operator CTCLoss: label batch size {label.shape[0]} differs from "
                          f"data's {n} (data {tuple(data.shape)}, label {tuple(label.shape)})")
    if label.shape[1] > t:
        raise GpundaError(f"Operator CTCLoss: the max number of labels {label.shape[1]} "
                          f"cannot exceed the sequence length {t} of data")
    for name, arr in zip(_inputs(p)[2:], rest):
        if arr.shape != (n,):
            raise GpundaError(f"Operator CTCLoss: {name} must have shape ({n},), got "
                              f"{tuple(arr.shape)}")


def _label_lengths(xp, label, p, rest):
    if p.use_label_lengths:
        lengths = rest[-1].astype("int64")
        if int((lengths < 0).sum()) or int((lengths > label.shape[1]).sum()):
            raise GpundaError(f"Operator CTCLoss: label_lengths must lie in 0..{label.shape[1]}")
        return lengths
    pad = 0 if p.blank_label == "first" else -1
    is_pad = label.astype("int64") == pad
    # the first padding value ends the label
    first = xp.where(is_pad.any(axis=1), is_pad.astype("int8").argmax(axis=1), label.shape[1])
    return first.astype("int64")


def _logaddexp3(xp, a, b, c):
    return xp.logaddexp(xp.logaddexp(a, b), c)


def _shift(xp, a, k, work):
    """``a`` moved k positions along axis 1 (k > 0: right, k < 0: left), -inf filled."""
    pad = xp.full((a.shape[0], abs(k)), -xp.inf, dtype=work)
    return (xp.concatenate([pad, a[:, :-k]], axis=1) if k > 0
            else xp.concatenate([a[:, -k:], pad], axis=1))


def _steps(xp, p, rest, t_max, n):
    if not p.use_data_lengths:
        return xp.full((n,), t_max, dtype="int64")
    steps = rest[0].astype("int64")
    if int((steps < 1).sum()) or int((steps > t_max).sum()):
        raise GpundaError(f"Operator CTCLoss: data_lengths must lie in 1..{t_max}")
    return steps


def _extended_labels(xp, p, label, lab_len, c, blank):
    """The label with blanks interleaved, ``ext`` (N, 2L+1), the mask of its positions
    inside each label, and where a path may skip the blank between two labels."""
    n, lmax = label.shape
    s_max = 2 * lmax + 1
    in_label = xp.arange(s_max)[None, :] < (2 * lab_len[:, None] + 1)
    ext = xp.full((n, s_max), blank, dtype="int64")
    if lmax:
        chars = xp.where(xp.arange(lmax)[None, :] < lab_len[:, None], label, blank)
        if int(((chars < 0) | (chars >= c)).sum()):
            raise GpundaError(f"Operator CTCLoss: label values must be classes in 0..{c - 1} "
                              f"(blank_label='{p.blank_label}' makes {blank} the blank)")
        ext[:, 1::2] = chars
    # as in MXNet (warp-ctc) the skip rule looks at label positions: two different
    # labels, so a label equal to the blank class is still a label
    skip = xp.zeros((n, s_max), dtype=bool)
    if s_max > 3:
        skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    return ext, in_label, skip


def _alpha(xp, emit, in_label, skip, work):
    """Forward variables: log-probability of the prefixes ending at (t, s), emissions
    through t included."""
    t_max, n, s_max = emit.shape
    neg_inf = xp.asarray(-xp.inf, dtype=work)
    alpha = xp.full((t_max, n, s_max), -xp.inf, dtype=work)
    alpha[0] = xp.where((xp.arange(s_max)[None, :] < 2) & in_label, emit[0], neg_inf)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        two = xp.where(skip, _shift(xp, prev, 2, work), neg_inf)
        alpha[t] = xp.where(in_label, _logaddexp3(xp, prev, _shift(xp, prev, 1, work), two)
                            + emit[t], neg_inf)
    return alpha


def _beta(xp, emit, in_label, skip, final, last_t, work):
    """Backward variables: log-probability of completing the label from (t, s), step
    t's own emission excluded; -inf past each sequence's last step."""
    t_max, n, s_max = emit.shape
    neg_inf = xp.asarray(-xp.inf, dtype=work)
    skip_up = xp.concatenate([skip[:, 2:], xp.zeros((n, 2), dtype=bool)], axis=1)
    beta = xp.full((t_max, n, s_max), -xp.inf, dtype=work)
    nxt = beta[t_max - 1]
    for t in range(t_max - 1, -1, -1):
        cur = xp.full((n, s_max), -xp.inf, dtype=work)
        if t < t_max - 1:
            e = nxt + emit[t + 1]
            two = xp.where(skip_up, _shift(xp, e, -2, work), neg_inf)
            cur = xp.where(in_label, _logaddexp3(xp, e, _shift(xp, e, -1, work), two), neg_inf)
        cur = xp.where((last_t == t)[:, None],
                       xp.where(final, xp.asarray(0, dtype=work), neg_inf), cur)
        beta[t] = xp.where((last_t < t)[:, None], neg_inf, cur)
        nxt = beta[t]
    return beta


def _log_sum(xp, a, work):
    """log(sum(exp(a), axis=1)) that gives -inf for an all -inf row without warnings."""
    m = a.max(axis=1)
    m = xp.where(xp.isfinite(m), m, 0)
    total = xp.exp(a - m[:, None]).sum(axis=1)
    return xp.where(total > 0, xp.log(xp.where(total > 0, total, 1)) + m,
                    xp.asarray(-xp.inf, dtype=work))


def _ctc_forward(xp, p, data, label, *rest):
    _check_shapes(data, label, rest, p)
    t_max, n, c = data.shape
    work = "float64" if data.dtype == "float64" else "float32"
    blank = 0 if p.blank_label == "first" else c - 1
    steps = _steps(xp, p, rest, t_max, n)
    valid_t = xp.arange(t_max)[:, None] < steps[None, :]                       # (T, N)
    # steps past a sequence's length may hold anything (padding, NaN): never read them
    x = xp.where(valid_t[:, :, None], data.astype(work), 0)
    logp = x - x.max(axis=2, keepdims=True)
    logp = logp - xp.log(xp.exp(logp).sum(axis=2, keepdims=True))

    lab = label.astype("int64")
    lab_len = _label_lengths(xp, label, p, rest)
    ext, in_label, skip = _extended_labels(xp, p, lab, lab_len, c, blank)
    emit = logp[:, xp.arange(n)[:, None], ext]                                # (T, N, S)
    last_t = steps - 1
    final = (xp.arange(ext.shape[1])[None, :] >= 2 * lab_len[:, None] - 1) & in_label
    alpha = _alpha(xp, emit, in_label, skip, work)
    log_like = _log_sum(xp, xp.where(final, alpha[last_t, xp.arange(n)], -xp.inf), work)
    # MXNet (warp-ctc) gives a label that cannot fit its steps (labels plus repeated
    # neighbours > steps) loss 0 and leaves its gradient unspecified: here it is 0
    lmax = lab.shape[1]
    repeats = (lab[:, 1:] == lab[:, :-1]) & (xp.arange(1, lmax)[None, :] < lab_len[:, None])
    feasible = lab_len + repeats.sum(axis=1) <= steps
    loss = xp.where(feasible, -log_like, 0)

    # gradient w.r.t. the activations: softmax minus each class's posterior occupancy
    beta = _beta(xp, emit, in_label, skip, final, last_t, work)
    usable = feasible & xp.isfinite(log_like)
    occ = xp.exp(alpha + beta - xp.where(usable, log_like, 0)[None, :, None])
    onehot = (ext[:, :, None] == xp.arange(c)[None, None, :]) & in_label[:, :, None]
    grad = xp.exp(logp) - xp.einsum("tns,nsc->tnc", occ, onehot.astype(work))
    grad = xp.where((valid_t & usable[None, :])[:, :, None], grad, 0)
    return loss.astype(data.dtype), grad.astype(data.dtype)


def _ctc_gradient(F, p, ins, outs, ograds):
    # data is an input of the backward op only so that a second-order pass reaches
    # its raising rule instead of finding the gradient disconnected
    grads = [F._ctc_loss_backward(ins[0], outs[1], ograds[0]), None]
    return grads + [None] * (int(p.use_data_lengths) + int(p.use_label_lengths))


def _infer_shape(p, shapes):
    data = shapes[0]
    if data is None or len(data) != 3:
        return list(shapes), None
    return list(shapes), [(data[1],), tuple(data)]


register(OpDef(
    "CTCLoss", _ctc_forward, params=_PARAMS, inputs=_inputs, num_outputs=2, num_visible=1,
    # no output names: MXNet registers them as "FListOutputNAmes" (sic), so its one
    # visible output is named output0
    aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
    gradient=_ctc_gradient, save=("inputs", "outputs"), infer_shape=_infer_shape,
    no_grad_inputs=("label", "data_lengths", "label_lengths"),
    capture="host loop over time steps and host checks of the label values", family="ctc",
    doc="CTC loss of (T, N, C) activations against (N, L) labels; see gpunda/ops/nn/ctc.py."))


def _scale_grad(xp, p, data, grad, head):
    return grad * head.reshape(1, -1, 1)


register(OpDef(
    "_ctc_loss_backward", _scale_grad, inputs=("data", "grad", "head"),
    gradient=not_differentiable("_backward_ctc_loss"),
    save=(), hidden=True, family="ctc",
    doc="CTCLoss's backward: the gradient kept by the forward pass times the head gradient."))
