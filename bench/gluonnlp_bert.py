"""A GluonNLP 0.10 BERT training step (masked LM + next sentence, GluonNLP's BERTAdam), the
same code on real MXNet 1.9.1 and on gpunda imported as mxnet.

GluonNLP is not a gpunda dependency, so this is not a `python -m bench` case: it runs in
venvs that hold gluonnlp==0.10.0 (the GluonNLP client's `.venvs/mxnet` and `.venvs/gpunda`,
../shared/clients/gluonnlp). One process measures one setting and prints its median:

    GPUNDA_AS_MXNET=1 VENV/bin/python bench/gluonnlp_bert.py --size tiny --mode hybrid

``--driver PY_A PY_B`` runs both interpreters alternately (``--rounds`` processes each,
BLAS/OpenMP pinned to one thread) and prints each one's median of the process medians and
the median of the per-round ratios. Process CPU time, 20 steps a block, median of 7 blocks.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

# tiny: the GluonNLP client's train_bert_mlm_nsp case (framework overhead dominates);
# small: 4 layers of 256 units over 64 tokens (GEMMs begin to count)
SIZES = {
    "tiny": dict(num_layers=2, units=16, hidden_size=32, num_heads=2, max_length=16,
                 embed_size=16, batch=8, seq=6, vocab=40),
    "small": dict(num_layers=4, units=256, hidden_size=1024, num_heads=4, max_length=64,
                  embed_size=256, batch=8, seq=64, vocab=2000),
}


def _model(mx, nlp, cfg):
    import collections
    counter = collections.Counter({f"w{i}": cfg["vocab"] + 100 - i for i in range(cfg["vocab"])})
    vocab = nlp.vocab.BERTVocab(counter)
    kw = {k: cfg[k] for k in ("num_layers", "units", "hidden_size", "num_heads", "max_length",
                              "embed_size")}
    net, _ = nlp.model.get_model("bert_12_768_12", dataset_name=None, vocab=vocab,
                                 pretrained=False, hparam_allow_override=True, dropout=0.0, **kw)
    return net, len(vocab)


def _inputs(mx, np, cfg, vocab_size):
    rs = np.random.RandomState(16)
    n, length = cfg["batch"], cfg["seq"]
    tok = rs.randint(5, vocab_size, size=(n, length)).astype("float32")
    types = np.zeros((n, length), "float32")
    types[:, length // 2:] = 1
    valid = np.full((n,), length, "float32")
    pos = np.tile(np.array([1, 4], "float32"), (n, 1))
    labels = tok[:, [1, 4]].copy()
    tok[:, [1, 4]] = 4
    nsp = (rs.rand(n) > 0.5).astype("float32")
    return [mx.nd.array(a) for a in (tok, types, valid, pos, labels, nsp)]


def measure(size, mode, steps=20, blocks=7):
    """Median seconds of process CPU time per training step."""
    import numpy as np
    import mxnet as mx
    import gluonnlp as nlp
    cfg = SIZES[size]
    net, vocab_size = _model(mx, nlp, cfg)
    net.initialize(mx.init.Normal(0.02))
    if mode == "hybrid":
        net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), "bertadam", {"learning_rate": 5e-3})
    tok, types, valid, pos, labels, nsp = _inputs(mx, np, cfg, vocab_size)
    ce = mx.gluon.loss.SoftmaxCELoss()

    def step():
        with mx.autograd.record():
            _, _, nsp_out, mlm_out = net(tok, types, valid, pos)
            loss = ce(mlm_out.reshape((-1, mlm_out.shape[-1])), labels.reshape((-1,))).mean() \
                + ce(nsp_out, nsp).mean()
        loss.backward()
        trainer.step(1)
        return float(loss.asscalar())

    for _ in range(5):
        step()
    times = []
    for _ in range(blocks):
        t = time.process_time()
        for _ in range(steps):
            step()
        times.append((time.process_time() - t) / steps)
    return statistics.median(times)


def drive(pythons, size, mode, rounds):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               MXNET_ENGINE_TYPE="NaiveEngine", GPUNDA_AS_MXNET="1")
    got = {p: [] for p in pythons}
    for _ in range(rounds):
        for p in pythons:
            out = subprocess.run([p, __file__, "--size", size, "--mode", mode], env=env,
                                 capture_output=True, text=True, check=True).stdout
            got[p].append(float(out.split()[-2]))
    for p in pythons:
        print(f"{p}: {statistics.median(got[p]):.2f} ms [{min(got[p]):.2f}-{max(got[p]):.2f}]")
    a, b = pythons
    ratios = [x / y for x, y in zip(got[a], got[b])]
    print(f"{size} {mode}: first / second {statistics.median(ratios):.2f} "
          f"[{min(ratios):.2f}-{max(ratios):.2f}] over {rounds} rounds")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--mode", choices=["imperative", "hybrid"], default="hybrid")
    ap.add_argument("--driver", nargs=2, metavar="PYTHON", help="two interpreters to compare")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    if args.driver:
        drive(args.driver, args.size, args.mode, args.rounds)
    else:
        print(f"{args.size} {args.mode} {measure(args.size, args.mode) * 1e3:.3f} ms")


if __name__ == "__main__":
    sys.exit(main())
