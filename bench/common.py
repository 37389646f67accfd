"""Shared workload definitions: sizes, seeded data and the NumPy/SciPy floor.

Every framework builds its workloads from the same seeded arrays made here,
so results can be checked against NumPy before anything is timed.
"""
from __future__ import annotations

import numpy as np

# case name -> (workload, description)
CASES = {
    "w1_add_1": ("W1", "a + b, shape (1,)"),
    "w1_add_1000": ("W1", "a + b, shape (1000,)"),
    "w1_add_1000x1000": ("W1", "a + b, shape (1000, 1000)"),
    "w1_exp_1": ("W1", "exp(a), shape (1,)"),
    "w2_chain100": ("W2", "100 recorded element-wise ops on (1000,) + backward, per op"),
    "w3_mlp_step": ("W3", "MLP 784-512-512-10 batch 128 SGD step, imperative"),
    "w3_mlp_step_hybrid": ("W3", "MLP 784-512-512-10 batch 128 SGD step, hybridized/compiled"),
    "w4_graph50": ("W4", "50 element-wise ops on (64,), imperative"),
    "w4_graph50_cached": ("W4", "50 element-wise ops on (64,), CachedOp/hybridized"),
    "w5_csr_dot": ("W5", "csr(10000x10000, 0.1%) @ dense(10000x64)"),
    "w5_csr_dot_t": ("W5", "csr(10000x10000, 0.1%).T @ dense(10000x64)"),
    "w7_cnn_step": ("W7", "demo CNN training step, batch 64, imperative (s per sample)"),
    "w7_cnn_step_hybrid": ("W7", "demo CNN training step, batch 64, hybridized (s per sample)"),
    "w8_lstm_step": ("W8", "2-layer LSTM forward+backward, seq 35, batch 32, input 256, hidden 256"),
    "w9_box_nms": ("W9", "contrib.box_nms of 4 x 2000 scored boxes with class ids, topk 1000"),
    "w9_roi_align": ("W9", "contrib.ROIAlign of 256 ROIs on a (2, 64, 38, 50) map to 7x7"),
}

# per-op cases report time per op; others report time per call (W7: per sample)
PER_UNIT = {"w2_chain100": 100, "w7_cnn_step": 64, "w7_cnn_step_hybrid": 64}


def time_block(fn, reps, clock):
    """Seconds per call of ``fn`` over one block of ``reps`` calls, read with ``clock``."""
    t0 = clock()
    for _ in range(reps):
        fn()
    return (clock() - t0) / reps


def rng(seed=0):
    return np.random.default_rng(seed)


def w1_inputs(case):
    shape = {"w1_add_1": (1,), "w1_add_1000": (1000,), "w1_add_1000x1000": (1000, 1000),
             "w1_exp_1": (1,)}[case]
    r = rng(1)
    return r.standard_normal(shape).astype(np.float32), r.standard_normal(shape).astype(np.float32)


def chain_inputs():
    r = rng(2)
    x = r.uniform(-1, 1, 1000).astype(np.float32)
    c = r.uniform(0.5, 1.0, 1000).astype(np.float32)
    return x, c


def mlp_inputs():
    r = rng(3)
    x = r.standard_normal((128, 784)).astype(np.float32)
    y = r.integers(0, 10, 128)
    dims = [(512, 784), (512, 512), (10, 512)]
    ws = [(r.standard_normal(d) * np.sqrt(2.0 / d[1])).astype(np.float32) for d in dims]
    bs = [np.zeros(d[0], np.float32) for d in dims]
    return x, y, ws, bs


def graph50_input():
    return rng(4).uniform(-1, 1, 64).astype(np.float32)


# the 50-op graph: a repeating pattern of cheap element-wise ops that stays bounded
GRAPH50 = [("mul", 0.9), ("add", 0.1), ("tanh", None), ("sin", None), ("mul", 1.1)] * 10


def csr_inputs():
    import scipy.sparse as sp
    r = rng(5)
    a = sp.random(10000, 10000, density=0.001, format="csr", dtype=np.float32, random_state=5)
    d = r.standard_normal((10000, 64)).astype(np.float32)
    return a, d


LSTM_SIZES = dict(seq=35, batch=32, inputs=256, hidden=256, layers=2)


def lstm_inputs():
    """TNC input (35, 32, 256) and a head gradient for the output (35, 32, 256)."""
    r = rng(7)
    s = LSTM_SIZES
    x = r.uniform(-1, 1, (s["seq"], s["batch"], s["inputs"])).astype(np.float32)
    head = r.uniform(-1, 1, (s["seq"], s["batch"], s["hidden"])).astype(np.float32)
    return x, head


def nms_inputs():
    """(4, 2000, 6) boxes [class id, score, xmin, ymin, xmax, ymax] in a unit image."""
    r = rng(8)
    xy = r.uniform(0, 1, (4, 2000, 2))
    wh = r.uniform(0.02, 0.3, (4, 2000, 2))
    ids = r.integers(0, 20, (4, 2000, 1))
    score = r.uniform(0, 1, (4, 2000, 1))
    return np.concatenate([ids, score, xy, xy + wh], axis=2).astype(np.float32)


def roi_align_inputs():
    """A (2, 64, 38, 50) feature map (stride 16) and 256 ROIs (batch, x1, y1, x2, y2)."""
    r = rng(9)
    data = r.standard_normal((2, 64, 38, 50)).astype(np.float32)
    xy = r.uniform(0, 600, (256, 2))
    wh = r.uniform(16, 200, (256, 2))
    batch = r.integers(0, 2, (256, 1))
    return data, np.concatenate([batch, xy, xy + wh], axis=1).astype(np.float32)


def cnn_inputs(batch=64):
    r = rng(6)
    x = r.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    y = r.integers(0, 10, batch)
    return x, y


# ---------------------------------------------------------------------------
# the NumPy floor, written by hand

def numpy_chain(x, c):
    """Forward and backward of the W2 chain by hand; returns d(sum)/dx."""
    acts = []
    h = x
    for i in range(100):
        k = i % 3
        acts.append(h)
        if k == 0:
            h = h * c
        elif k == 1:
            h = h + c
        else:
            h = np.tanh(h)
            acts[-1] = h      # tanh's backward needs its output
    g = np.ones_like(h)
    for i in reversed(range(100)):
        k = i % 3
        if k == 0:
            g = g * c
        elif k == 2:
            y = acts[i]
            g = g * (1 - y * y)
    return g


def numpy_mlp_step(x, y, ws, bs, lr=0.1):
    """One SGD step of the MLP by hand; updates ws/bs in place, returns the loss."""
    h1p = x @ ws[0].T + bs[0]
    h1 = np.maximum(h1p, 0)
    h2p = h1 @ ws[1].T + bs[1]
    h2 = np.maximum(h2p, 0)
    z = h2 @ ws[2].T + bs[2]
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.log(p[np.arange(n), y]).mean()
    dz = p
    dz[np.arange(n), y] -= 1
    dz /= n
    gw2 = dz.T @ h2
    gb2 = dz.sum(0)
    dh2 = (dz @ ws[2]) * (h2p > 0)
    gw1 = dh2.T @ h1
    gb1 = dh2.sum(0)
    dh1 = (dh2 @ ws[1]) * (h1p > 0)
    gw0 = dh1.T @ x
    gb0 = dh1.sum(0)
    for w, g in zip(ws, (gw0, gw1, gw2)):
        w -= lr * g
    for b, g in zip(bs, (gb0, gb1, gb2)):
        b -= lr * g
    return float(loss)


def numpy_graph50(x):
    h = x
    for op, s in GRAPH50:
        if op == "mul":
            h = h * np.float32(s)
        elif op == "add":
            h = h + np.float32(s)
        elif op == "tanh":
            h = np.tanh(h)
        else:
            h = np.sin(h)
    return h
