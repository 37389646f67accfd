"""Data-parallel training under mpiexec: ranks agree, and match single-process training.

For a model without batch statistics (MLP) N ranks on shards equal one process on the
concatenated batch. As in MXNet 1.9.1, whose Trainer sets rescale_grad to 1/batch_size and
whose store sums the workers' gradients, ``trainer.step(b)`` with each rank's batch b adds
up the N shards' gradients over b: the reference steps with the same b (not N * b).
With BatchNorm (the demo CNN) each rank normalises with its own shard's statistics, as
MXNet's dist_sync does; the single-process reference then runs the shards separately and
accumulates their gradients, and only trainable parameters are compared (running
statistics stay per rank, as in MXNet).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _mpi_util import mpiexec_or_skip

SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import gpunda as mx
    from gpunda import autograd, gluon, nd

    model, mode, steps, nranks, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    kv = mx.kv.create("dist_sync") if mode == "dist" else None
    rank = kv.rank if kv else 0
    b = 4                                   # per-rank batch
    mx.random.seed(100 + rank)              # different inits: the broadcast must fix them
    if model == "mlp":
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(16, activation="relu", in_units=20), gluon.nn.Dense(10, in_units=16))
        shape = (20,)
    else:
        from gpunda._tools.demo import build_model
        net = build_model()
        shape = (1, 8, 8)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                            kvstore=kv if kv else "device")
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    r = np.random.default_rng(7)
    X = r.standard_normal((steps, nranks * b) + shape).astype(np.float32)
    Y = r.integers(0, 10, (steps, nranks * b)).astype(np.float32)
    for s in range(steps):
        if mode == "dist":
            x, y = nd.array(X[s, rank * b:(rank + 1) * b]), nd.array(Y[s, rank * b:(rank + 1) * b])
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(b)
        elif mode == "concat":
            with autograd.record():
                loss = loss_fn(net(nd.array(X[s])), nd.array(Y[s]))
            loss.backward()
            trainer.step(b)
        else:   # shards: one forward per shard, gradients accumulated, one update
            with autograd.record():
                losses = [loss_fn(net(nd.array(X[s, k * b:(k + 1) * b])),
                                  nd.array(Y[s, k * b:(k + 1) * b])) for k in range(nranks)]
            autograd.backward(losses)
            trainer.step(b)
    params = {k: v.data().asnumpy() for k, v in net.collect_params().items() if v.grad_req != "null"}
    np.savez(f"{out}-{rank}.npz", **params)
    print("DONE", rank)
''')


def _run(tmp_path, cmd, out):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, GPUNDA_DEFAULT_DEVICE="cpu", GPUNDA_KVSTORE_TIMEOUT="60",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run(cmd[:1] + [str(script)] + cmd[1:] if cmd[0] == sys.executable
                       else cmd[:3] + [sys.executable, str(script)] + cmd[3:],
                       capture_output=True, text=True, timeout=240, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r


def _load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("model, nranks, ref_mode", [("mlp", 2, "concat"), ("cnn", 2, "shards"),
                                                     ("mlp", 4, "concat")])
def test_data_parallel_matches_single_process(tmp_path, model, nranks, ref_mode):
    exe = mpiexec_or_skip()
    steps = 3
    _run(tmp_path, [exe, "-n", str(nranks), model, "dist", str(steps), str(nranks),
                    str(tmp_path / "dist")], "dist")
    _run(tmp_path, [sys.executable, model, ref_mode, str(steps), str(nranks),
                    str(tmp_path / "ref")], "ref")
    ranks = [_load(tmp_path / f"dist-{r}.npz") for r in range(nranks)]
    ref = _load(tmp_path / "ref-0.npz")
    assert set(ranks[0]) == set(ref) and ref
    for r in ranks[1:]:
        for k in ref:
            np.testing.assert_array_equal(r[k], ranks[0][k], err_msg=f"{k} differs across ranks")
    for k in ref:
        np.testing.assert_allclose(ranks[0][k], ref[k], rtol=1e-4, atol=1e-5, err_msg=k)
    # the run changed the weights (the comparison is not between two initial states)
    init = _load(tmp_path / "ref-0.npz")
    assert any(np.abs(v).sum() > 0 for v in init.values())
