"""Make tests/data/rnn_mxnet191.npz with real MXNet 1.9.1 (CPU): RNN op outputs and gradients."""
import numpy as np, mxnet as mx
rng = np.random.RandomState(7)
out = {}
cases = [("lstm", True, 2, None), ("gru", True, 2, None), ("rnn_tanh", False, 2, None),
         ("rnn_relu", True, 1, None), ("lstm", False, 1, 3), ("lstm", True, 2, 2)]
for ci, (mode, bi, L, P) in enumerate(cases):
    T, N, I, H = 4, 3, 5, 4
    D = 2 if bi else 1
    G = {"lstm": 4, "gru": 3}.get(mode, 1)
    Hout = P or H
    size = 0
    for l in range(L):
        ni = I if l == 0 else Hout * D
        size += D * (G * H * ni + G * H * Hout + 2 * G * H + (P * H if P else 0))
    x = rng.uniform(-1, 1, (T, N, I)).astype(np.float32)
    w = rng.uniform(-0.6, 0.6, (size,)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (L * D, N, Hout)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (L * D, N, H)).astype(np.float32)
    hg = rng.uniform(-1, 1, (T, N, D * Hout)).astype(np.float32)
    args = [mx.nd.array(x), mx.nd.array(w), mx.nd.array(h0)] + ([mx.nd.array(c0)] if mode == "lstm" else [])
    kw = dict(state_size=H, num_layers=L, bidirectional=bi, mode=mode, state_outputs=True)
    if P:
        kw["projection_size"] = P
    pre = f"c{ci}_"
    out[pre + "config"] = np.array([mode, str(bi), str(L), str(P or 0)])
    out[pre + "x"], out[pre + "w"], out[pre + "h0"], out[pre + "c0"], out[pre + "head"] = x, w, h0, c0, hg
    if P:   # MXNet's CPU kernel has no training support for LSTMP: forward only
        outs = mx.nd.RNN(*args, **kw)
        for k, o in enumerate(outs):
            out[pre + f"out{k}"] = o.asnumpy()
        continue
    for a in args:
        a.attach_grad()
    with mx.autograd.record():
        outs = mx.nd.RNN(*args, **kw)
        loss = (outs[0] * mx.nd.array(hg)).sum() + 0.5 * outs[1].sum() + \
            (0.3 * outs[2].sum() if mode == "lstm" else 0)
    loss.backward()
    for k, o in enumerate(outs):
        out[pre + f"out{k}"] = o.asnumpy()
    for k, a in enumerate(args):
        out[pre + f"grad{k}"] = a.grad.asnumpy()
np.savez_compressed("/work/main/tests/data/rnn_mxnet191.npz", **out)
print(len(out), "arrays")
