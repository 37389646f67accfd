"""``dist_async`` over MPI (a server thread on rank 0 applies each push on arrival) and
how gpunda answers MXNet's launcher variables (DMLC_ROLE, DMLC_NUM_WORKER, ...).

The reference numbers come from real MXNet 1.9.1 (/work/mxref, built with
DIST_KVSTORE) run with one scheduler, one server and three workers on localhost
(DMLC_PS_ROOT_URI=127.0.0.1 DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=3; the scheduler and
the server are ``python -c "import mxnet"`` with DMLC_ROLE set), each worker running:

    kv = mx.kv.create('dist_async')            # (+ kv.set_gradient_compression(
    r = kv.rank                                #     {'type': '2bit', 'threshold': 0.5}))
    kv.init(0, nd.ones(4))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    o = nd.zeros(4)
    kv._barrier()
    if r == 1:
        kv.push(0, nd.full((4,), 1.0)); kv.pull(0, out=o)      # own: 0.9 (2bit: 0.95)
    kv._barrier()
    for s in range(3):
        kv.push(0, nd.array([0.3, -0.6, 0.2, 1.0]) * (r + 1))
    kv.pull(0, out=o); kv._barrier(); kv.pull(0, out=o)       # final
    # final: [0.36, 1.98, 0.54, -0.9]; 2bit: [0.6, 1.4, 0.6, 0.5]

MXNet's final pull is only as fresh as its server (one worker saw [0.39, 1.92, 0.56,
-0.8] in one run): async. Here every worker's own pull comes after its pushes are
applied (MPI keeps one sender's messages in order), so after the barrier all see the sum.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _mpi_util import mpiexec_or_skip

SCRIPT = textwrap.dedent('''
    import json
    import sys
    import numpy as np
    import gpunda as mx
    from gpunda import nd
    from mpi4py import MPI

    mode, prefix = sys.argv[1], sys.argv[2]
    kv = mx.kv.create("dist_async")
    r, n = kv.rank, kv.num_workers
    res = {"type": kv.type, "num_workers": n}
    if mode == "2bit":
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, nd.ones(4))
    if mode == "no_optimizer":
        try:
            kv.push(0, nd.ones(4))
        except mx.MXNetError as e:
            res["error"] = str(e)
    else:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
        o = nd.zeros(4)
        world = MPI.COMM_WORLD
        # no barrier: rank 1 pushes and sees its update while the others still wait for
        # its token (a synchronous store would wait for their pushes and never finish)
        if r == 1:
            kv.push(0, nd.full((4,), 1.0))
            kv.pull(0, out=o)
            res["own"] = o.asnumpy().tolist()
            for d in range(n):
                if d != 1:
                    world.send("go", dest=d, tag=5)
        else:
            world.recv(source=1, tag=5)
        for s in range(3):
            kv.push(0, nd.array([0.3, -0.6, 0.2, 1.0]) * (r + 1))
        kv.pull(0, out=o)
        kv.barrier()
        kv.pull(0, out=o)
        res["final"] = o.asnumpy().tolist()
        kv.init(1, nd.zeros(1000))
        before = kv._comm.bytes_sent
        kv.push(1, nd.full((1000,), 0.7))
        res["push_bytes"] = kv._comm.bytes_sent - before
        if mode == "plain":
            # row_sparse: only the pushed rows travel and SGD updates only those rows
            kv.init(2, nd.ones((5, 2)).tostype("row_sparse"))
            g = nd.array([[1.0, 2.0] if i == r else [0.0, 0.0] for i in range(5)])
            before = kv._comm.bytes_sent
            kv.push(2, g.tostype("row_sparse"))
            res["rsp_bytes"] = kv._comm.bytes_sent - before
            out = nd.zeros((5, 2)).tostype("row_sparse")
            kv.row_sparse_pull(2, out=out, row_ids=nd.array([r]))
            kv.barrier()
            kv.row_sparse_pull(2, out=out, row_ids=nd.array([0, 1, 2, 3, 4]))
            res["rsp"] = out.asnumpy().tolist()
    with open(f"{prefix}-{r}.json", "w") as f:
        json.dump(res, f)
''')


def _env(**extra):
    env = dict(os.environ, GPUNDA_DEFAULT_DEVICE="cpu", GPUNDA_KVSTORE_TIMEOUT="15",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for k in [k for k in env if k.startswith("DMLC_")]:
        del env[k]
    env.update(extra)
    return env


def _run(tmp_path, mode, n=3):
    exe = mpiexec_or_skip()
    script = tmp_path / "kv_async.py"
    script.write_text(SCRIPT)
    prefix = str(tmp_path / mode)
    r = subprocess.run([exe, "-n", str(n), sys.executable, str(script), mode, prefix],
                       capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return [json.loads(open(f"{prefix}-{k}.json").read()) for k in range(n)]


def test_async_pushes_are_applied_on_arrival_without_a_barrier(tmp_path):
    res = _run(tmp_path, "plain")
    assert [x["type"] for x in res] == ["dist_async"] * 3
    assert [x["num_workers"] for x in res] == [3] * 3
    # MXNet 1.9.1 (module docstring): rank 1 alone has pushed -> 1 - 0.1 * 1.0
    assert res[1]["own"] == [np.float32(0.9).item()] * 4
    # every push applied once with SGD: 1 - 0.1 * (1 + 3 * (1 + 2 + 3) * g); the order
    # of arrival changes only the float32 rounding (MXNet's final: [0.36, 1.98, 0.54, -0.9])
    g = np.array([0.3, -0.6, 0.2, 1.0])
    want = 1 - 0.1 * (1 + 18 * g)
    for x in res:
        np.testing.assert_allclose(x["final"], want, rtol=0, atol=2e-6)
    # an uncompressed push sends the 1000 float32 values
    assert [x["push_bytes"] for x in res] == [4000] * 3
    # a row_sparse push sends its one row id (int64) and row (2 float32)
    assert [x["rsp_bytes"] for x in res] == [16] * 3
    # MXNet 1.9.1, three workers: kv.init(2, nd.ones((5, 2)).tostype('row_sparse')); SGD(0.1);
    # rank r pushes row r = [1, 2] as row_sparse; after a barrier row_sparse_pull of all rows
    # gives [[0.9, 0.8]] * 3 + [[1, 1]] * 2 on every worker
    want = [[0.9, 0.8]] * 3 + [[1.0, 1.0]] * 2
    for x in res:
        np.testing.assert_allclose(x["rsp"], want, rtol=1e-6)


def test_async_compressed_pushes_are_dequantised_and_applied(tmp_path):
    res = _run(tmp_path, "2bit")
    # MXNet 1.9.1 (module docstring, 2bit): own 1 - 0.1 * 0.5; final [0.6, 1.4, 0.6, 0.5]
    assert res[1]["own"] == [np.float32(0.95).item()] * 4
    for x in res:
        np.testing.assert_allclose(x["final"], [0.6, 1.4, 0.6, 0.5], rtol=0, atol=2e-6)
    # the packed push: 63 float32 words for 1000 values
    assert [x["push_bytes"] for x in res] == [252] * 3


def test_async_push_needs_an_optimizer(tmp_path):
    # MXNet's server: "Updater needs to be set for async mode"
    res = _run(tmp_path, "no_optimizer", n=2)
    for x in res:
        assert "Updater needs to be set for async mode" in x["error"]


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=_env(**env))


def test_server_role_stops_at_import_namingmpiexec_or_skip():
    # MXNet runs the server loop when `import mxnet` sees DMLC_ROLE=server; gpunda has no
    # server processes and says what to launch instead
    for role in ("server", "scheduler"):
        r = _python("import gpunda", DMLC_ROLE=role)
        assert r.returncode != 0
        assert f"DMLC_ROLE='{role}'" in r.stderr and "mpiexec -n N python train.py" in r.stderr
    assert _python("import gpunda", DMLC_ROLE="worker").returncode == 0


def test_a_launcher_worker_outside_an_mpi_job_is_told_to_usempiexec_or_skip():
    mpiexec_or_skip()
    code = "import gpunda as mx; mx.kv.create('dist_async')"
    r = _python(code, DMLC_ROLE="worker", DMLC_NUM_WORKER="2", DMLC_NUM_SERVER="1",
                DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT="9091")
    assert r.returncode != 0
    assert "DMLC_NUM_WORKER=2" in r.stderr and "mpiexec -n 2 python train.py" in r.stderr


def test_kvstore_server_run_names_what_to_launch():
    import gpunda as mx
    server = mx.kv.KVStoreServer(mx.kv.create("local"))
    with pytest.raises(mx.MXNetError, match="mpiexec -n N python train.py"):
        server.run()


TRAINER_SCRIPT = textwrap.dedent('''
    import json
    import sys
    import numpy as np
    import gpunda as mx
    from gpunda import autograd, gluon, nd

    kv = mx.kv.create("dist_async")
    r = kv.rank
    net = gluon.nn.Dense(1, in_units=3, use_bias=False)
    net.initialize(mx.init.Constant(0.5 + r))        # rank 0's value must reach the server
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=kv)
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3) * (r + 1))
    for _ in range(2):
        with autograd.record():
            y = net(x).sum()
        y.backward()
        trainer.step(2)
    kv.barrier()
    o = nd.zeros((1, 3))
    kv.pull(0, out=o)
    with open(f"{sys.argv[1]}-{r}.json", "w") as f:
        json.dump({"on_kv": trainer._update_on_kvstore, "server": o.asnumpy().tolist()}, f)
''')


def test_trainer_updates_on_the_async_store(tmp_path):
    # MXNet's Trainer with 'dist_async' updates on the kvstore (even with one context):
    # each worker's step pushes its gradient (rescaled by its own batch) and the server
    # applies it; after both workers' two steps the weight is w0 - lr * sum of them all
    exe = mpiexec_or_skip()
    script = tmp_path / "trainer_async.py"
    script.write_text(TRAINER_SCRIPT)
    prefix = str(tmp_path / "trainer")
    r = subprocess.run([exe, "-n", "2", sys.executable, str(script), prefix],
                       capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    grad_per_step = [x.sum(0) * (k + 1) / 2 for k in range(2)]    # d(sum(x @ w.T))/dw / batch
    want = 0.5 - 0.1 * 2 * sum(grad_per_step)
    for k in range(2):
        res = json.loads(open(f"{prefix}-{k}.json").read())
        assert res["on_kv"] is True
        np.testing.assert_allclose(res["server"], [want], rtol=1e-6)


def test_trainer_refuses_async_without_update_on_kvstore():
    import gpunda as mx
    net = mx.gluon.nn.Dense(1, in_units=2)
    net.initialize()
    # MXNet 1.9.1's message
    with pytest.raises(ValueError, match="Please set update_on_kvstore=True when training in "
                                         "async mode"):
        mx.gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_async",
                         update_on_kvstore=False)
