"""One direction of one LSTM(P) layer, forward and backward through time, for the ``RNN`` op.

# NOTE [LSTM step kernels]
The loops run once per time step on the host, so each step does as few array passes as it
can, into buffers allocated once per layer:

- the input projection of every step is one GEMM over the whole sequence, written straight
  into the ``gates`` reserve, with both biases added there once;
- the recurrent GEMM multiplies by a C-contiguous copy of ``W_h2h``'s transpose (a
  transposed view costs OpenBLAS about 1.5x per small GEMM);
- i, f and o are ``sigmoid(a) = (1 + tanh(a / 2)) / 2`` and g is ``tanh(a)``: the halving
  is folded into the weights and biases (exact, a power of two), so one ``tanh`` over all
  four gates and one multiply-add activate them;
- ``tanh(c)`` is kept in the reserve for the backward;
- the backward multiplies the gates' derivatives into the pre-activation gradients in
  place, and the weight gradients are one GEMM each over the whole sequence.

Everything goes through the array module ``xp`` (NumPy or CuPy).
"""
from __future__ import annotations

from gpunda.ops._util import capture_gemm, matmul


def _matmul_into(xp, a, b, out):
    """out <- a @ b (2-D), without a temporary where the array module allows it."""
    if capture_gemm.fn is not None:
        out[...] = capture_gemm.fn(a, b)
    else:
        xp.matmul(a, b, out=out)
    return out


def _gate_scales(xp, hsz, dtype):
    """Per gate column: the pre-activation scale and the offset after tanh (i, f, g, o)."""
    scale = xp.full((4 * hsz,), 0.5, dtype=dtype)
    scale[2 * hsz:3 * hsz] = 1
    offset = scale.copy()
    offset[2 * hsz:3 * hsz] = 0
    return scale, offset


def lstm_forward(xp, p, x, w, h0, c0, valid, hs, gates, cs, tcs):
    """Run one direction over time-ordered ``x`` (T, N, I); returns the outputs (T, N, P).

    Fills the reserve's views: ``hs`` (T+1, N, P) the hidden states, ``gates`` (T, N, 4H)
    the activated gates, ``cs`` (T+1, N, H) the cell states, ``tcs`` (T, N, H) tanh of them.
    ``valid`` (T, N) masks steps past each sequence's end, or is None.
    """
    t_len, n, _ = x.shape
    hsz = p.state_size
    dt = x.dtype
    scale, offset = _gate_scales(xp, hsz, dt)
    wx_t = (w["wx"] * scale[:, None]).T
    wh_t = xp.ascontiguousarray((w["wh"] * scale[:, None]).T)
    whr_t = xp.ascontiguousarray(w["whr"].T) if "whr" in w else None
    pre = gates.reshape(t_len * n, 4 * hsz)
    _matmul_into(xp, x.reshape(t_len * n, -1), wx_t, pre)
    pre += (w["bx"] + w["bh"]) * scale
    lo, hi = p.lstm_state_clip_min, p.lstm_state_clip_max
    hw = xp.empty((n, 4 * hsz), dtype=dt)
    ig = xp.empty((n, hsz), dtype=dt)
    hraw = xp.empty((n, hsz), dtype=dt) if whr_t is not None else None
    ys = hs[1:] if valid is None else xp.empty((t_len, n, h0.shape[1]), dtype=dt)
    hs[0] = h0
    cs[0] = c0
    for step in range(t_len):
        h, c = hs[step], cs[step]
        gt = gates[step]
        gt += _matmul_into(xp, h, wh_t, hw)
        xp.tanh(gt, out=gt)
        gt *= scale
        gt += offset
        i, f, g, o = (gt[:, k * hsz:(k + 1) * hsz] for k in range(4))
        cn, tc = cs[step + 1], tcs[step]
        xp.multiply(f, c, out=cn)
        cn += xp.multiply(i, g, out=ig)
        if lo is not None:
            if p.lstm_state_clip_nan:
                cn[...] = xp.where(xp.isnan(cn), hi, cn)
            xp.clip(cn, lo, hi, out=cn)
        m = None if valid is None else valid[step][:, None]
        if m is not None:       # past a sequence's end the state is carried over
            cn[...] = xp.where(m, cn, c)
        xp.tanh(cn, out=tc)
        hn = hs[step + 1]
        if whr_t is None:
            xp.multiply(o, tc, out=hn)
        else:
            _matmul_into(xp, xp.multiply(o, tc, out=hraw), whr_t, hn)
        if m is not None:
            hn[...] = xp.where(m, hn, h)
            ys[step] = xp.where(m, hn, 0)
    return ys


def lstm_backward(xp, p, x, w, hs, gates, cs, tcs, dy, dh, dc, valid, want_dx=True):
    """BPTT over one direction (the reserve views as ``lstm_forward`` filled them).

    Returns dx (T, N, I; None unless ``want_dx``), the weight gradients (a dict like ``w``)
    and the gradients of the initial hidden and cell states.
    """
    t_len, n, _ = x.shape
    hsz = p.state_size
    dt = x.dtype
    da_all = xp.empty((t_len, n, 4 * hsz), dtype=dt)
    proj = "whr" in w
    dr_all = xp.empty((t_len, n, hs.shape[2]), dtype=dt) if proj else None
    wh = w["wh"]
    clip = p.lstm_state_clip_min is not None
    dht = xp.empty((n, hs.shape[2]), dtype=dt)
    dhraw = xp.empty((n, hsz), dtype=dt) if proj else dht
    dct = xp.empty((n, hsz), dtype=dt)
    dgate = xp.empty((n, 4 * hsz), dtype=dt)
    # dh and dc are the callers' arrays at first: the loop writes into its own buffers
    dh_buf, dc_buf = xp.empty_like(dht), xp.empty_like(dct)
    for step in range(t_len - 1, -1, -1):
        m = None if valid is None else valid[step][:, None]
        if m is None:
            xp.add(dh, dy[step], out=dht)
            dh_in = dht
        else:
            dht[...] = dh + xp.where(m, dy[step], 0)
            # past a sequence's end the step only passes the state (and its gradient) through
            dh_in = xp.where(m, dht, 0)
        if proj:
            dr_all[step] = dh_in
            _matmul_into(xp, dh_in, w["whr"], dhraw)
        gt = gates[step]
        i, f, g, o = (gt[:, k * hsz:(k + 1) * hsz] for k in range(4))
        tc, c_prev = tcs[step], cs[step]
        # dc_t = dhraw * o * (1 - tanh(c)^2) + dc
        xp.multiply(tc, tc, out=dct)
        xp.subtract(1, dct, out=dct)
        dct *= o
        dct *= dhraw
        dct += dc if m is None else xp.where(m, dc, 0)
        if clip:
            cn = cs[step + 1]
            dct *= (cn > p.lstm_state_clip_min) & (cn < p.lstm_state_clip_max)
        # the gates' derivatives: s (1 - s) for i, f, o; 1 - g^2 for g
        xp.subtract(1, gt, out=dgate)
        dgate *= gt
        dg = dgate[:, 2 * hsz:3 * hsz]
        xp.multiply(g, g, out=dg)
        xp.subtract(1, dg, out=dg)
        da = da_all[step]
        xp.multiply(dct, g, out=da[:, :hsz])
        xp.multiply(dct, c_prev, out=da[:, hsz:2 * hsz])
        xp.multiply(dct, i, out=da[:, 2 * hsz:3 * hsz])
        xp.multiply(dhraw, tc, out=da[:, 3 * hsz:])
        da *= dgate
        # a step past the end passes the state's gradient through
        dc_carry = None if m is None else xp.where(m, 0, dc)
        dc_next = xp.multiply(dct, f, out=dc_buf)
        dh_prev = _matmul_into(xp, da, wh, dh_buf)
        if m is not None:
            dh_prev += xp.where(m, 0, dht)
            dc_next += dc_carry
        dh, dc = dh_prev, dc_next
    flat = da_all.reshape(t_len * n, 4 * hsz)
    flat_t = flat.T
    bias = flat.sum(axis=0)
    dgw = {"wx": matmul(xp, flat_t, x.reshape(t_len * n, -1)), "bx": bias,
           "wh": matmul(xp, flat_t, hs[:-1].reshape(t_len * n, -1)), "bh": bias}
    if proj:
        hraw = gates[:, :, 3 * hsz:] * tcs
        dgw["whr"] = matmul(xp, dr_all.reshape(t_len * n, -1).T, hraw.reshape(t_len * n, hsz))
    dx = matmul(xp, flat, w["wx"]).reshape(x.shape) if want_dx else None
    return dx, dgw, dh, dc
