"""KVStore: local semantics in-process; dist_sync under mpiexec (skipped without MPI)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from _mpi_util import mpiexec_or_skip


def test_local_init_push_pull_replaces_with_the_sum():
    kv = mx.kv.create("local")
    assert kv.type == "local" and kv.rank == 0 and kv.num_workers == 1
    kv.init(3, nd.ones((2, 3)) * 2)
    out = nd.zeros((2, 3))
    kv.pull(3, out=out)
    assert out.asnumpy().tolist() == [[2] * 3] * 2
    kv.push(3, nd.ones((2, 3)) * 8)
    kv.pull(3, out=out)
    assert (out.asnumpy() == 8).all()
    # several devices: values are summed, pulls broadcast
    vals = [nd.ones((2, 3), ctx=mx.cpu(i)) * (i + 1) for i in range(3)]
    kv.push(3, vals)
    outs = [nd.zeros((2, 3), ctx=mx.cpu(i)) for i in range(2)]
    kv.pull(3, out=outs)
    assert all((o.asnumpy() == 6).all() for o in outs)
    assert outs[1].context == mx.cpu(1)


def test_list_keys_pushpull_and_broadcast():
    kv = mx.kv.create("device")
    kv.init(["a", "b"], [nd.zeros((2,)), nd.zeros((3,))])
    a, b = nd.array([1.0, 2.0]), nd.array([1.0, 1.0, 1.0])
    kv.pushpull(["a", "b"], [a, b])
    assert a.asnumpy().tolist() == [1, 2] and b.asnumpy().tolist() == [1, 1, 1]
    out = nd.zeros((2,))
    kv.broadcast("c", nd.array([5.0, 6.0]), out=out)
    assert out.asnumpy().tolist() == [5, 6]


def test_updater_on_the_store():
    kv = mx.kv.create("local")
    kv.init(0, nd.ones((2,)))
    kv.set_updater(lambda key, grad, weight: weight.__isub__(grad * 0.5))
    kv.push(0, [nd.ones((2,)), nd.ones((2,))])          # merged grad 2 -> w = 1 - 1
    out = nd.zeros((2,))
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [0, 0]


def test_bad_input():
    with pytest.raises(mx.GpundaError, match="unknown type 'dist_snyc'.*'dist_sync'"):
        mx.kv.create("dist_snyc")
    kv = mx.kv.create("local")
    with pytest.raises(mx.GpundaError, match="key 7 has not been initialised"):
        kv.push(7, nd.ones((2,)))
    kv.init(7, nd.ones((2,)))
    with pytest.raises(mx.GpundaError, match="shape \\(3,\\) but the key holds \\(2,\\)"):
        kv.push(7, nd.ones((3,)))
    with pytest.raises(mx.GpundaError, match="out 0 for key 7 has shape \\(4,\\)"):
        kv.pull(7, out=nd.zeros((4,)))
    with pytest.raises(mx.GpundaError, match="dtype int32"):
        kv.push(7, nd.ones((2,), dtype="int32"))
    out = nd.zeros((2,))
    kv.pull(7, out=out)
    assert out.asnumpy().tolist() == [1, 1]        # failed pushes changed nothing


MPI_SCRIPT = textwrap.dedent('''
    import sys, numpy as np
    import gpunda as mx
    from gpunda import nd
    kv = mx.kv.create("dist_sync")
    r, n = kv.rank, kv.num_workers
    mode = sys.argv[1]
    if mode == "semantics":
        kv.init("w", nd.ones((3,)) * (r + 10))         # rank 0's value wins
        out = nd.zeros((3,))
        kv.pull("w", out=out)
        assert out.asnumpy().tolist() == [10.0] * 3, out.asnumpy()
        kv.push("w", nd.ones((3,)) * (r + 1))          # summed across ranks
        kv.pull("w", out=out)
        assert out.asnumpy().tolist() == [n * (n + 1) / 2] * 3, out.asnumpy()
        a = nd.array([float(r), 1.0])
        kv.init("g", nd.zeros((2,)))
        kv.pushpull("g", a)
        assert a.asnumpy().tolist() == [n * (n - 1) / 2, float(n)], a.asnumpy()
        arrs = [nd.ones((5,)) * r, nd.ones((2, 2)), nd.ones((7,), dtype="float64")]
        kv.allreduce_arrays(arrs, bucket_bytes=16)
        assert arrs[0].asnumpy().tolist() == [n * (n - 1) / 2] * 5
        assert arrs[2].dtype == np.float64 and arrs[2].asnumpy()[0] == n
        kv.barrier()
        print(f"OK {r}", flush=True)
    elif mode == "mismatch":
        try:
            kv.init("x", nd.ones((2 + r,)))
        except mx.GpundaError as e:
            print(f"MISMATCH {r}: {e}", flush=True)
    elif mode == "crash":
        kv.init("x", nd.ones((2,)))
        if r == 1:
            raise RuntimeError("rank 1 fails on purpose")
        kv.push("x", nd.ones((2,)))
        print("NOT REACHED", r)
''')


def _run_mpi(tmp_path, n, mode, timeout=120):
    exe = mpiexec_or_skip()
    script = tmp_path / "kv_script.py"
    script.write_text(MPI_SCRIPT)
    env = dict(os.environ, GPUNDA_DEFAULT_DEVICE="cpu", GPUNDA_KVSTORE_TIMEOUT="30",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return subprocess.run([exe, "-n", str(n), sys.executable, str(script), mode],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_dist_sync_semantics_two_ranks(tmp_path):
    r = _run_mpi(tmp_path, 2, "semantics")
    assert r.returncode == 0, r.stdout + r.stderr
    # every assertion ran on both ranks (an AssertionError would fail the job); lines of the
    # two ranks may interleave in mpiexec's merged stdout, so count rather than match lines
    assert r.stdout.count("OK") == 2, r.stdout


def test_dist_sync_detects_shape_mismatch(tmp_path):
    r = _run_mpi(tmp_path, 2, "mismatch")
    # both ranks detect it (their lines may interleave in mpiexec's merged stdout)
    assert r.stdout.count("MISMATCH ") == 2, r.stdout + r.stderr
    assert r.stdout.count("different keys, shapes or dtypes") == 2


def test_a_failing_rank_ends_the_job(tmp_path):
    r = _run_mpi(tmp_path, 2, "crash", timeout=90)
    assert r.returncode != 0
    assert "rank 1 fails on purpose" in r.stderr
    assert "NOT REACHED" not in r.stdout


NCCL_SCRIPT = textwrap.dedent('''
    import numpy as np
    import gpunda as mx
    kv = mx.kv.create("nccl")
    a = mx.nd.ones((1000,), ctx=mx.gpu(0)) * (kv.rank + 1)
    kv.allreduce_arrays([a])
    n = kv.num_workers
    assert np.allclose(a.asnumpy(), n * (n + 1) / 2), a.asnumpy()[:4]
    kv.init("w", mx.nd.zeros((3,), ctx=mx.gpu(0)))
    kv.push("w", mx.nd.ones((3,), ctx=mx.gpu(0)))
    out = mx.nd.zeros((3,), ctx=mx.gpu(0))
    kv.pull("w", out=out)
    assert out.asnumpy().tolist() == [float(n)] * 3
    print("NCCL OK", kv.rank)
''')


def _nccl_or_skip():
    try:
        from cupy.cuda import nccl
    except Exception as e:   # noqa: BLE001
        pytest.skip(f"cupy.cuda.nccl does not import ({e})")
    if not getattr(nccl, "available", True):
        pytest.skip("CuPy could not load libnccl (pip install nvidia-nccl-cu12)")


@pytest.mark.gpu
def test_nccl_one_rank_communicator(tmp_path):
    """A 1-rank NCCL communicator still runs the whole path (unique id over MPI, all-reduce)."""
    _nccl_or_skip()
    exe = mpiexec_or_skip()
    script = tmp_path / "nccl_script.py"
    script.write_text(NCCL_SCRIPT)
    env = dict(os.environ, GPUNDA_KVSTORE_TIMEOUT="60",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([exe, "-n", "1", sys.executable, str(script)], capture_output=True,
                       text=True, timeout=180, env=env)
    assert r.returncode == 0 and "NCCL OK 0" in r.stdout, r.stdout + r.stderr


def test_pull_leaves_row_sparse_outs_unless_asked():
    kv = mx.kv.create("local")
    kv.init("w", nd.ones((4, 2)))
    rsp = (nd.ones((4, 2)) * 2).tostype("row_sparse")
    kv.pull("w", out=rsp)                       # ignore_sparse=True: untouched, as MXNet
    assert (rsp.asnumpy() == 2).all()
    kv.pull("w", out=rsp, ignore_sparse=False)
    assert (rsp.asnumpy() == 1).all()


def test_row_sparse_pull_rows_and_outs():
    kv = mx.kv.create("local")
    full = np.arange(8.0).reshape(4, 2)
    kv.init("w", nd.array(full).tostype("row_sparse"))
    outs = [nd.zeros((4, 2)).tostype("row_sparse") for _ in range(2)]
    kv.row_sparse_pull("w", out=outs, row_ids=nd.array([3, 1, 1]))   # one id array for all
    for o in outs:
        expected = np.zeros((4, 2))
        expected[[1, 3]] = full[[1, 3]]
        assert o.asnumpy().tolist() == expected.tolist()
        assert sorted(o.indices.asnumpy().tolist()) == [1, 3]
    outs = [nd.zeros((4, 2)).tostype("row_sparse") for _ in range(2)]
    kv.row_sparse_pull("w", out=outs, row_ids=[nd.array([0]), nd.array([2])])  # one per out
    assert outs[0].asnumpy()[0].tolist() == [0, 1] and outs[1].asnumpy()[2].tolist() == [4, 5]
    assert outs[0].asnumpy()[2].tolist() == [0, 0]
    with pytest.raises(mx.MXNetError, match="row_sparse arrays only"):
        kv.row_sparse_pull("w", out=nd.zeros((4, 2)), row_ids=nd.array([1]))
    # list of keys: row_ids per key
    kv.init("v", nd.array(full).tostype("row_sparse"))
    o1, o2 = (nd.zeros((4, 2)).tostype("row_sparse") for _ in range(2))
    kv.row_sparse_pull(["w", "v"], out=[o1, o2], row_ids=[nd.array([0]), nd.array([3])])
    assert o1.indices.asnumpy().tolist() == [0] and o2.indices.asnumpy().tolist() == [3]


def test_store_keeps_one_key_type():
    kv = mx.kv.create("local")
    kv.init(3, nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="mixed key types"):
        kv.init("a", nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="mixed key types"):
        kv.pull("a", out=nd.ones((2,)))


def test_registered_store_is_created_by_name():
    @mx.kv.KVStoreBase.register
    class MyTestStore(mx.kv.KVStoreBase):
        pass
    try:
        assert isinstance(mx.kv.create("MyTestStore"), MyTestStore)
        assert isinstance(mx.kv.create("local"), mx.kv.KVStoreBase)
        assert mx.kv.create("local").is_capable("optimizer")
        with pytest.raises(TypeError):
            mx.kv.create(3)
    finally:
        mx.kv.KVStoreBase.kv_registry.pop("myteststore")


def test_nccl_without_libnccl_raises_a_gpunda_error(monkeypatch):
    # CuPy without libnccl imports cupy.cuda.nccl as a stub whose ``available`` is False
    import types
    from gpunda.base import GpundaError
    from gpunda.kvstore.kvstore import _NcclComm
    stub_cuda = types.ModuleType("cupy.cuda")
    stub_cuda.nccl = types.ModuleType("cupy.cuda.nccl")
    stub_cuda.nccl.available = False
    stub = types.ModuleType("cupy")
    stub.cuda = stub_cuda
    monkeypatch.setitem(sys.modules, "cupy", stub)
    monkeypatch.setitem(sys.modules, "cupy.cuda", stub_cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", stub_cuda.nccl)
    with pytest.raises(GpundaError, match=r"KVStore\('nccl'\): CuPy could not load the NCCL"):
        _NcclComm(mpi=None)


def test_kvstore_has_mxnets_private_server_calls():
    # MXNet 1.9.1's KVStore has _barrier and _send_command_to_servers (SVRGModule calls
    # _barrier on a 'local' store); a local store's server command does nothing, and
    # gradient compression on a local store raises MXNet's message
    kv = mx.kv.create("local")
    assert kv._barrier() is None
    assert kv._send_command_to_servers(0, "") is None
    with pytest.raises(mx.MXNetError, match="not supported for this type of kvstore"):
        kv.set_gradient_compression({"type": "2bit"})
    kv = mx.kv.create("device")     # MXNet 1.9.1 accepts it on 'device' (returns None)
    assert kv.set_gradient_compression({"type": "2bit"}) is None
