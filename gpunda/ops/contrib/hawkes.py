"""``_contrib_hawkesll``: log likelihood of K independent exponential-kernel Hawkes
processes over ragged batches of events, as MXNet 1.x's contrib op.

Intensity of mark k: ``lda_k + alpha_k * beta_k * sum_{t_i < t, y_i = k}
exp(-beta_k (t - t_i))``. Per sample, events are given by interarrival times
``lags`` and ``marks`` (N, T), the first ``valid_length`` of each row valid, on the
window (0, max_time]; ``state`` (N, K) carries the decayed memory of earlier
events and ``out_state`` returns it at max_time. The pass runs over the T steps
vectorised across the batch. The backward carries forward-mode derivatives of
the memory with respect to beta and the initial state through the same pass, so
it is exact for both outputs (MXNet's kernel reads only the log likelihood's
head gradient; with out_state unused, as in MXNet's tests, the two agree). It is
a kernel, hence once-differentiable.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops._util import not_differentiable
from gpunda.ops.registry import OpDef, register

_INPUTS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def _check(mu, alpha, beta, state, lags, marks, vlen, tmax):
    N, T = lags.shape if lags.ndim == 2 else (None, None)
    K = mu.shape[1] if mu.ndim == 2 else None
    want = {"lda": (N, K), "alpha": (K,), "beta": (K,), "state": (N, K), "lags": (N, T),
            "marks": (N, T), "valid_length": (N,), "max_time": (N,)}
    for name, a in zip(_INPUTS, (mu, alpha, beta, state, lags, marks, vlen, tmax)):
        if N is None or K is None or tuple(a.shape) != want[name]:
            raise GpundaError(f"Operator _contrib_hawkesll: input {name} has shape "
                              f"{tuple(a.shape)}; expected lda (N, K), alpha/beta (K,), "
                              f"state (N, K), lags/marks (N, T), valid_length/max_time (N,)")


def _pass(xp, mu, alpha, beta, state, lags, marks, vlen, tmax, grads):
    """Log likelihood and final state; with ``grads`` also their derivatives."""
    N, K = mu.shape
    dt = mu.dtype
    rows = xp.arange(N)
    s = state.astype(dt, copy=True)
    last = xp.zeros((N, K), dt)
    t = xp.zeros((N,), dt)
    ll = xp.zeros((N,), dt)
    marks = marks.astype(np.int64)
    if grads:
        s_b = xp.zeros((N, K), dt)     # d state / d beta_k
        s_0 = xp.ones((N, K), dt)      # d state / d initial state
        g_mu, g_a, g_b, g_s = (xp.zeros((N, K), dt) for _ in range(4))
    for j in range(lags.shape[1]):
        act = j < vlen
        if not bool(act.any()):
            break
        c = xp.where(act, marks[:, j], 0)
        if bool(((c < 0) | (c >= K)).any()):
            raise GpundaError(f"Operator _contrib_hawkesll: marks[:, {j}] holds a mark outside "
                              f"[0, {K})")
        t = t + xp.where(act, lags[:, j], 0).astype(dt)
        d = t - last[rows, c]
        a, b, sc, m = alpha[c], beta[c], s[rows, c], mu[rows, c]
        ed = xp.exp(-b * d)
        lda = m + a * b * sc * ed
        comp = m * d + a * sc * (1 - ed)
        ll = ll + xp.where(act, xp.log(xp.where(act, lda, 1)) - comp, 0)
        if grads:
            ed_b = -d * ed
            sb, s0 = s_b[rows, c], s_0[rows, c]
            inv = 1 / xp.where(act, lda, 1)
            upd = (
                (g_mu, inv - d),
                (g_a, b * sc * ed * inv - sc * (1 - ed)),
                (g_b, (a * sc * ed + a * b * (sb * ed + sc * ed_b)) * inv
                 - a * (sb * (1 - ed) - sc * ed_b)),
                (g_s, a * b * s0 * ed * inv - a * s0 * (1 - ed)))
            for acc, v in upd:
                acc[rows, c] = acc[rows, c] + xp.where(act, v, 0)
            s_b[rows, c] = xp.where(act, sb * ed + sc * ed_b, sb)
            s_0[rows, c] = xp.where(act, s0 * ed, s0)
        s[rows, c] = xp.where(act, 1 + sc * ed, sc)
        last[rows, c] = xp.where(act, t, last[rows, c])
    d = tmax.astype(dt)[:, None] - last
    ed = xp.exp(-beta[None, :] * d)
    ll = ll - (mu * d + alpha[None, :] * s * (1 - ed)).sum(axis=1)
    out_state = ed * s
    if not grads:
        return ll, out_state
    ed_b = -d * ed
    g_mu = g_mu - d
    g_a = g_a - s * (1 - ed)
    g_b = g_b - alpha[None, :] * (s_b * (1 - ed) - s * ed_b)
    g_s = g_s - alpha[None, :] * s_0 * (1 - ed)
    return ll, out_state, (g_mu, g_a, g_b, g_s), (s_b * ed + s * ed_b, s_0 * ed)


def _forward(xp, p, mu, alpha, beta, state, lags, marks, vlen, tmax):
    _check(mu, alpha, beta, state, lags, marks, vlen, tmax)
    return _pass(xp, mu, alpha, beta, state, lags, marks, vlen, tmax, False)


def _backward(xp, p, og_ll, og_state, mu, alpha, beta, state, lags, marks, vlen, tmax):
    _, _, (g_mu, g_a, g_b, g_s), (os_b, os_0) = _pass(
        xp, mu, alpha, beta, state, lags, marks, vlen, tmax, True)
    w = og_ll[:, None]
    return (w * g_mu, (w * g_a).sum(axis=0), (w * g_b + og_state * os_b).sum(axis=0),
            w * g_s + og_state * os_0)


def _gradient(F, p, ins, outs, ograds):
    og_ll, og_state = ograds
    if og_ll is None:
        og_ll = F.zeros_like(outs[0])
    if og_state is None:
        og_state = F.zeros_like(outs[1])
    g = F._contrib_backward_hawkesll(og_ll, og_state, *ins)
    return list(g) + [None] * 4


register(OpDef(
    "_contrib_hawkesll", _forward, inputs=_INPUTS, num_outputs=2,
    output_names=("output", "out_state"), gradient=_gradient, save=("inputs", "outputs"),
    no_grad_inputs=("lags", "marks", "valid_length", "max_time"),
    capture="host loop over the event sequence", family="contrib",
    infer_shape=lambda p, s: (list(s), None if s[0] is None or s[4] is None
                              else [(s[4][0],), tuple(s[0])]),
    doc="Log likelihood (N,) and final state (N, K) of marked Hawkes processes with "
        "exponential kernels (see gpunda/ops/contrib/hawkes.py)."))
register(OpDef(
    "_contrib_backward_hawkesll", _backward,
    inputs=("ograd_output", "ograd_state") + _INPUTS, num_outputs=4,
    gradient=not_differentiable("_contrib_backward_hawkesll"), save=(), family="contrib",
    capture="host loop",
    doc="Gradients of _contrib_hawkesll with respect to lda, alpha, beta and state."))
