"""Shared workload definitions: sizes, seeded data and the NumPy/SciPy floor.

Every framework builds its workloads from the same seeded arrays made here,
so results can be checked against NumPy before anything is timed.
"""
from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

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
    "w9_imagerec": ("W9", "ImageRecordIter epoch of 256 500x375 JPEGs from reset, batch 32: "
                          "decode, resize 256, centre crop 224, mean/std (s per sample)"),
    "w9_box_nms": ("W9", "contrib.box_nms of 10000 scored boxes with 20 class ids, no topk"),
    "w9_roi_align": ("W9", "contrib.ROIAlign of 512 ROIs on a (1, 256, 64, 64) map to 7x7"),
    "w10_fit_module": ("W10", "Module.fit, one epoch: MLP 784-512-512-10, NDArrayIter 20 x 128, "
                              "SGD, accuracy metric (s per epoch)"),
    "w10_fit_gluon": ("W10", "the W10 epoch as a hybridized Gluon loop: record, backward, "
                             "Trainer.step, accuracy (s per epoch)"),
    "w11_resnet_step": ("W11", "CIFAR-style ResNet-20 (model zoo ResNetV1, thumbnail) training "
                               "step, batch 32 of 3x32x32, SGD momentum, imperative"),
    "w11_resnet_step_hybrid": ("W11", "CIFAR-style ResNet-20 training step, batch 32 of 3x32x32, "
                                      "hybridized/compiled"),
    "w12_opt_adam": ("W12", "gluon Trainer.step, Adam, 200 float32 tensors of 9.39M values"),
    "w12_opt_sgd_mom": ("W12", "gluon Trainer.step, SGD momentum 0.9, 200 float32 tensors of "
                               "9.39M values"),
    "w12_opt_lamb": ("W12", "gluon Trainer.step, LAMB, 200 float32 tensors of 9.39M values"),
    "w13_conv_resnet20": ("W13", "every convolution of ResNet-20 (batch 32, 3x32x32), forward and "
                                 "both gradients, float32 NCHW"),
    "w13_conv_resnet50": ("W13", "one of each ResNet-50 convolution shape (batch 4, 224x224 "
                                 "stages), forward and both gradients, float32 NCHW"),
}

# (case, reference case) -> the most gpunda's case may take, in times the reference's
GPUNDA_TARGETS = {("w10_fit_module", "w10_fit_gluon"): 1.1}

# per-op cases report time per op; others report time per call (W7: per sample)
PER_UNIT = {"w2_chain100": 100, "w7_cnn_step": 64, "w7_cnn_step_hybrid": 64, "w9_imagerec": 256}


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


FIT = dict(batches=20, batch=128, lr=0.1)


def fit_inputs():
    """W10's epoch of data (2560 x 784, labels 0-9) and the MLP's starting weights."""
    r = rng(10)
    n = FIT["batches"] * FIT["batch"]
    _, _, ws, bs = mlp_inputs()
    return (r.standard_normal((n, 784)).astype(np.float32), r.integers(0, 10, n), ws, bs)


def numpy_fit_epoch(x, y, ws, bs):
    """One epoch of W10 by hand: the W3 step over each batch in order."""
    b = FIT["batch"]
    for k in range(0, len(x), b):
        numpy_mlp_step(x[k:k + b], y[k:k + b], ws, bs, FIT["lr"])


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


# W9: the target puts ImageRecordIter at >= 0.8x MXNet's throughput (<= 1.25x its time)
IMAGEREC = dict(images=256, height=375, width=500, quality=90, batch=32, data_shape=(3, 224, 224),
                resize=256, mean=(123.68, 116.28, 103.53), std=(58.395, 57.12, 57.375))


def imagerec_threads():
    """Decoding threads of W9: the suite's --threads (run.py exports it as OMP_NUM_THREADS)."""
    return max(1, int(os.environ.get("OMP_NUM_THREADS", "1")))


def imagerec_file(images=None):
    """W9's .rec file (seeded smooth images with noise, JPEG; ``images`` of them, W9's
    count by default), made once in the temp folder by the first worker that needs it (the
    NumPy floor's, which has OpenCV and gpunda)."""
    p = dict(IMAGEREC, images=images or IMAGEREC["images"])
    path = Path(tempfile.gettempdir()) / (f"gpunda-bench-w9-{p['images']}x{p['height']}x"
                                          f"{p['width']}-q{p['quality']}.rec")
    if path.exists():
        return str(path)
    import cv2

    from gpunda import recordio
    r = rng(9)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    w = recordio.MXRecordIO(str(tmp), "w")
    for k in range(p["images"]):
        small = r.integers(0, 256, (12, 16, 3), dtype=np.uint8)
        img = cv2.resize(small, (p["width"], p["height"]), interpolation=cv2.INTER_CUBIC)
        img = np.clip(img + r.integers(-20, 21, img.shape), 0, 255).astype(np.uint8)
        w.write(recordio.pack_img(recordio.IRHeader(0, float(k % 10), k, 0), img,
                                  quality=p["quality"]))
    w.close()
    os.replace(tmp, path)     # atomic: a worker never sees half a file
    return str(path)


def imagerec_payloads(path):
    """The image bytes of each record of a .rec file (RecordIO framing and IRHeader parsed
    here, so the floor does not lean on any framework's reader)."""
    data, out, pos = Path(path).read_bytes(), [], 0
    while pos < len(data):
        parts = []
        while True:
            magic, lrec = struct.unpack_from("<II", data, pos)
            assert magic == 0xCED7230A, f"{path}: bad RecordIO magic at byte {pos}"
            cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
            parts.append(data[pos + 8:pos + 8 + length])
            pos += 8 + length + (-length % 4)
            if cflag in (0, 3):
                break
        rec = struct.pack("<I", 0xCED7230A).join(parts)
        flag = struct.unpack_from("<I", rec)[0]
        out.append(rec[24 + 4 * flag:])
    return out


def numpy_imagerec_image(buf):
    """One W9 image by hand with OpenCV: decode, shorter edge to 256, centre crop, RGB CHW,
    (x - mean) / std."""
    import cv2
    p = IMAGEREC
    img = cv2.imdecode(np.frombuffer(buf, np.uint8), cv2.IMREAD_COLOR)
    rows, cols = img.shape[:2]
    s = p["resize"]
    img = cv2.resize(img, (s, s * rows // cols) if rows > cols else (s * cols // rows, s),
                     interpolation=cv2.INTER_LINEAR)
    _, h, w = p["data_shape"]
    y, x = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    chw = img[y:y + h, x:x + w, ::-1].transpose(2, 0, 1).astype(np.float32)
    mean = np.float32(p["mean"])[:, None, None]
    return (chw - mean) / np.float32(p["std"])[:, None, None]
NMS_BOXES = 10000


def nms_inputs():
    """(1, 10000, 6) boxes [class id, score, xmin, ymin, xmax, ymax] in a unit image
    (the target's case: box_nms on 10,000 boxes)."""
    r = rng(8)
    n = NMS_BOXES
    xy = r.uniform(0, 1, (1, n, 2))
    wh = r.uniform(0.02, 0.3, (1, n, 2))
    ids = r.integers(0, 20, (1, n, 1))
    score = r.uniform(0, 1, (1, n, 1))
    return np.concatenate([ids, score, xy, xy + wh], axis=2).astype(np.float32)


def roi_align_inputs():
    """A (1, 256, 64, 64) feature map (stride 16 of a 1024 x 1024 image) and 512 ROIs
    (batch, x1, y1, x2, y2) of 16 to 512 pixels a side, clipped to the image."""
    r = rng(9)
    data = r.standard_normal((1, 256, 64, 64)).astype(np.float32)
    xy = r.uniform(0, 1008, (512, 2))
    wh = r.uniform(16, 512, (512, 2))
    batch = np.zeros((512, 1))
    box = np.concatenate([batch, xy, np.minimum(xy + wh, 1023)], axis=1)
    return data, box.astype(np.float32)


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


# W11: a small ResNet trained end to end. ResNet-20 for CIFAR (He et al. 2016, section 4.2): a 3x3
# stem convolution, three stages of three basic blocks with 16, 32 and 64 channels
# (stride 2 and a 1x1 projection where the width changes), global pooling, dense 10.
# In MXNet's model zoo that is ResNetV1(BasicBlockV1, [3, 3, 3], [16, 16, 32, 64],
# thumbnail=True), whose stem has no batch norm or ReLU; the PyTorch model copies that.
RESNET = dict(batch=32, image=32, layers=(3, 3, 3), channels=(16, 16, 32, 64), classes=10,
              lr=0.05, momentum=0.9)


def resnet_inputs(batch=None, seed=10):
    """Generated CIFAR-like data: class prototypes plus noise, (N, 3, 32, 32) and labels."""
    p = RESNET
    n = p["batch"] if batch is None else batch
    r = rng(seed)
    protos = r.standard_normal((p["classes"], 3, p["image"], p["image"])).astype(np.float32)
    y = r.integers(0, p["classes"], n)
    x = protos[y] + 0.5 * r.standard_normal((n, 3, p["image"], p["image"])).astype(np.float32)
    return x, y


# W12: one optimizer step over many tensors (issue 36): name -> (optimizer, its params)
OPT_CASES = {"w12_opt_adam": ("adam", {"learning_rate": 0.001, "wd": 1e-4}),
             "w12_opt_sgd_mom": ("sgd", {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}),
             "w12_opt_lamb": ("lamb", {"learning_rate": 0.001, "wd": 1e-4})}


def opt_inputs():
    """200 (weight, gradient) float32 pairs: 100 (300, 312) matrices and their (312,)
    biases, 9,391,200 values in all."""
    r = rng(12)
    out = []
    for _ in range(100):
        for shape in ((300, 312), (312,)):
            out.append((r.standard_normal(shape, dtype=np.float32),
                        (r.standard_normal(shape, dtype=np.float32) * 0.01)))
    return out


def numpy_opt_step(name, hp, ws, gs, states, t):
    """The floor: MXNet's update formula for every tensor, plain NumPy, one tensor at
    a time (weights and states in place; rescale_grad 1)."""
    lr, wd = hp["learning_rate"], hp["wd"]
    for i, (w, g) in enumerate(zip(ws, gs)):
        if name == "sgd":
            m = states.setdefault(i, np.zeros_like(w))
            m *= hp["momentum"]
            m -= lr * (g + wd * w)
            w += m
            continue
        m, v = states.setdefault(i, (np.zeros_like(w), np.zeros_like(w)))
        gr = g + wd * w if name == "adam" else g
        m *= 0.9
        m += 0.1 * gr
        v *= 0.999
        v += 0.001 * gr * gr
        if name == "adam":
            w -= (lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)) * m / (np.sqrt(v) + 1e-8)
        else:
            d = (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-6) + wd * w
            r1, r2 = np.linalg.norm(w), np.linalg.norm(d)
            w -= (lr * (r1 / r2 if r1 and r2 else 1.0)) * d


# W13: convolution layers alone, forward and both gradients (issue 36). Per case the batch
# and (in channels, map size, out channels, kernel, stride, pad, how many such layers,
# whether the data gradient is wanted: not for a stem, whose input is the data).
CONV_LAYERS = {
    "w13_conv_resnet20": (32, [(3, 32, 16, 3, 1, 1, 1, False),
                               (16, 32, 16, 3, 1, 1, 6, True),
                               (16, 32, 32, 3, 2, 1, 1, True),
                               (16, 32, 32, 1, 2, 0, 1, True),
                               (32, 16, 32, 3, 1, 1, 5, True),
                               (32, 16, 64, 3, 2, 1, 1, True),
                               (32, 16, 64, 1, 2, 0, 1, True),
                               (64, 8, 64, 3, 1, 1, 5, True)]),
    "w13_conv_resnet50": (4, [(64, 56, 64, 1, 1, 0, 1, True),
                              (64, 56, 64, 3, 1, 1, 1, True),
                              (64, 56, 256, 1, 1, 0, 1, True),
                              (256, 56, 64, 1, 1, 0, 1, True),
                              (256, 56, 512, 1, 2, 0, 1, True),
                              (128, 28, 128, 3, 1, 1, 1, True),
                              (512, 28, 128, 1, 1, 0, 1, True),
                              (256, 14, 256, 3, 1, 1, 1, True),
                              (1024, 14, 256, 1, 1, 0, 1, True),
                              (512, 7, 512, 3, 1, 1, 1, True),
                              (2048, 7, 512, 1, 1, 0, 1, True)]),
}


def conv_layers(case):
    """Per layer shape of a W13 case: (x, w, output gradient, Convolution kwargs, count,
    whether the data gradient is wanted), seeded float32 arrays."""
    r = rng(13)
    batch, layers = CONV_LAYERS[case]
    out = []
    for cin, size, cout, k, s, p, count, need_dx in layers:
        o = (size + 2 * p - k) // s + 1
        x = r.standard_normal((batch, cin, size, size)).astype(np.float32)
        w = (r.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        g = r.standard_normal((batch, cout, o, o)).astype(np.float32)
        geo = dict(kernel=(k, k), stride=(s, s), pad=(p, p), num_filter=cout, no_bias=True)
        out.append((x, w, g, geo, count, need_dx))
    return out

