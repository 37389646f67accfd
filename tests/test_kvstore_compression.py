"""KVStore 2-bit gradient compression against numbers recorded from real MXNet 1.9.1
(/work/mxref, CPU), plus the packed wire format and its size over MPI.

The recordings come from this MXNet 1.9.1 session (``import mxnet as mx``):

    kv = mx.kv.create('device')
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    kv.init(0, mx.nd.zeros(4)); out = mx.nd.zeros(4)
    for g in ([0.6, -0.7, 0.2, 1.2], [0.6, -0.7, 0.2, 1.2], [0.1, 0.1, 0.1, -3.0], [0, 0, 0, 0]):
        kv.push(0, mx.nd.array(g)); kv.pull(0, out=out); print(out)
    # [0.5, -0.5, 0.0, 0.5], [0.5, -0.5, 0.0, 0.5], [0.0, 0.0, 0.5, -0.5], [0.0, 0.0, 0.0, -0.5]
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _mpi_util import mpiexec_or_skip

import gpunda as mx
from gpunda import nd
from gpunda.kvstore.gradient_compression import (compressed_size, dequantize_2bit,
                                                 quantize_2bit)


def _device_store(threshold=0.5, kind="device"):
    kv = mx.kv.create(kind)
    kv.set_gradient_compression({"type": "2bit", "threshold": threshold})
    return kv


def test_residual_feedback_over_a_sequence_of_pushes():
    # MXNet 1.9.1: the session in the module docstring
    kv = _device_store()
    kv.init(0, nd.zeros(4))
    out = nd.zeros(4)
    got = []
    for g in ([0.6, -0.7, 0.2, 1.2], [0.6, -0.7, 0.2, 1.2], [0.1, 0.1, 0.1, -3.0], [0, 0, 0, 0]):
        kv.push(0, nd.array(g))
        kv.pull(0, out=out)
        got.append(out.asnumpy().tolist())
    assert got == [[0.5, -0.5, 0.0, 0.5], [0.5, -0.5, 0.0, 0.5], [0.0, 0.0, 0.5, -0.5],
                   [0.0, 0.0, 0.0, -0.5]]


def test_a_list_push_quantises_each_device_with_its_own_residual():
    # MXNet 1.9.1:
    #   kv2 = mx.kv.create('device')
    #   kv2.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    #   kv2.init('w', mx.nd.zeros(4)); o = mx.nd.zeros(4)
    #   for it in range(3):
    #       kv2.push('w', [mx.nd.array([0.3, -0.3, 0.6, 0.0], ctx=mx.cpu(0)),
    #                      mx.nd.array([0.3, 0.4, -0.6, 0.9], ctx=mx.cpu(1))])
    #       kv2.pull('w', out=o)
    #   -> [0, 0, 0, 0.5], [1.0, 0, 0, 0.5], [0, 0.5, 0, 0.5]
    kv = _device_store()
    kv.init("w", nd.zeros(4))
    o = nd.zeros(4)
    got = []
    for _ in range(3):
        kv.push("w", [nd.array([0.3, -0.3, 0.6, 0.0], ctx=mx.cpu(0)),
                      nd.array([0.3, 0.4, -0.6, 0.9], ctx=mx.cpu(1))])
        kv.pull("w", out=o)
        got.append(o.asnumpy().tolist())
    assert got == [[0.0, 0.0, 0.0, 0.5], [1.0, 0.0, 0.0, 0.5], [0.0, 0.5, 0.0, 0.5]]


def test_compressed_gradients_feed_the_optimizer_on_the_store():
    # MXNet 1.9.1:
    #   kv4 = mx.kv.create('device')
    #   kv4.set_gradient_compression({'type': '2bit', 'threshold': 1.0})
    #   kv4.init(0, mx.nd.ones(2)); kv4.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    #   3 x (kv4.push(0, mx.nd.array([0.7, -2.5])); kv4.pull(0, out=o))
    #   -> [1.0, 1.1], [0.9, 1.2], [0.8, 1.3]
    kv = _device_store(1.0)
    kv.init(0, nd.ones(2))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    o = nd.zeros(2)
    got = []
    for _ in range(3):
        kv.push(0, nd.array([0.7, -2.5]))
        kv.pull(0, out=o)
        got.append(o.asnumpy())
    np.testing.assert_allclose(got, [[1.0, 1.1], [0.9, 1.2], [0.8, 1.3]], rtol=1e-6)


def test_blocks_of_sixteen_and_a_partial_block():
    # MXNet 1.9.1: threshold 0.25, x = np.linspace(-1, 1, 33).reshape(3, 11), pushed twice
    kv = _device_store(0.25)
    x = np.linspace(-1, 1, 33).astype("float32").reshape(3, 11)
    kv.init(0, nd.zeros((3, 11)))
    o = nd.zeros((3, 11))
    q = 0.25
    kv.push(0, nd.array(x))
    kv.pull(0, out=o)
    assert o.asnumpy().ravel().tolist() == [-q] * 13 + [0.0] * 7 + [q] * 13
    kv.push(0, nd.array(x))
    kv.pull(0, out=o)
    assert o.asnumpy().ravel().tolist() == [-q] * 15 + [0.0] * 3 + [q] * 15


def test_pushpull_multiple_keys_and_a_new_setting_keeps_the_residual():
    # MXNet 1.9.1: pushpull of [0.6, -0.7, 0.2, 1.2] -> [0.5, -0.5, 0.0, 0.5];
    # keys [0, 1] pushed twice with [0.3, 0.3] / [0.4, -0.4] -> [0.5, 0.5] / [0.5, -0.5];
    # threshold 0.5, push [0.3, 0.3], then threshold 0.25, push [0.1, 0.0] -> [0.25, 0.25]
    kv = _device_store()
    kv.init(0, nd.zeros(4))
    v = nd.array([0.6, -0.7, 0.2, 1.2])
    kv.pushpull(0, v)
    assert v.asnumpy().tolist() == [0.5, -0.5, 0.0, 0.5]

    kv = _device_store()
    kv.init([0, 1], [nd.zeros(2), nd.zeros(2)])
    for _ in range(2):
        kv.push([0, 1], [nd.array([0.3, 0.3]), nd.array([0.4, -0.4])])
    o = [nd.zeros(2), nd.zeros(2)]
    kv.pull([0, 1], out=o)
    assert [a.asnumpy().tolist() for a in o] == [[0.5, 0.5], [0.5, -0.5]]

    kv = _device_store()
    kv.init(0, nd.zeros(2))
    kv.push(0, nd.array([0.3, 0.3]))
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.25})
    kv.push(0, nd.array([0.1, 0.0]))
    o = nd.zeros(2)
    kv.pull(0, out=o)
    assert o.asnumpy().tolist() == [0.25, 0.25]


def test_set_after_init_and_on_local_allreduce_device():
    # MXNet 1.9.1 accepts the setting after init (and after a push) and on any type
    # naming 'device': k.init(0, zeros(4)); k.set_gradient_compression(...);
    # push [0.6, -0.7, 0.2, 1.2] -> [0.5, -0.5, 0, 0.5]
    for kind in ("device", "local_allreduce_device"):
        kv = mx.kv.create(kind)
        kv.init(0, nd.zeros(4))
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
        kv.push(0, nd.array([0.6, -0.7, 0.2, 1.2]))
        o = nd.zeros(4)
        kv.pull(0, out=o)
        assert o.asnumpy().tolist() == [0.5, -0.5, 0.0, 0.5]


def test_bad_parameters_raise_mxnets_errors():
    # MXNet 1.9.1's messages, recorded:
    #   'local' / 'local_allreduce_cpu': Exception 'Gradient compression is not supported for
    #   this type of kvstore'; type '1bit' (added only in MXNet 2.0) / '3bit' / 'none':
    #   'Unknown type for gradient compression 1bit'; threshold 0 or -1: 'Check failed:
    #   params.threshold > 0 (0 vs. 0) : threshold must be greater than 0'; no type: 'Required
    #   parameter type of string is not presented'; threshold 'abc': "Invalid Parameter format
    #   for threshold expect float but value='abc'"; a str instead of a dict: AssertionError
    #   'unexpected type for param_dict: <class 'str'>'; an unknown extra key is ignored.
    for kind in ("local", "local_allreduce_cpu"):
        with pytest.raises(Exception, match="not supported for this type of kvstore"):
            mx.kv.create(kind).set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv = mx.kv.create("device")
    for kind in ("1bit", "3bit", "none"):
        with pytest.raises(mx.MXNetError, match=f"Unknown type for gradient compression {kind}"):
            kv.set_gradient_compression({"type": kind, "threshold": 0.5})
    for t, shown in ((0, "0"), (-1, "-1")):
        with pytest.raises(mx.MXNetError, match=rf"\({shown} vs\. 0\) : threshold must be greater"):
            kv.set_gradient_compression({"type": "2bit", "threshold": t})
    with pytest.raises(mx.MXNetError, match="Required parameter type of string is not presented"):
        kv.set_gradient_compression({"threshold": 0.5})
    with pytest.raises(mx.MXNetError, match="expect float but value='abc'"):
        kv.set_gradient_compression({"type": "2bit", "threshold": "abc"})
    with pytest.raises(AssertionError, match="unexpected type for param_dict"):
        kv.set_gradient_compression("2bit")
    assert not kv._gc.active                 # none of the refused settings took
    kv.set_gradient_compression({"type": "2bit", "foo": 1})
    assert kv._gc.active and kv._gc.threshold == 0.5


def test_row_sparse_and_non_float32_pushes_are_refused():
    # MXNet 1.9.1's dist store refuses both ('Gradient compression for row sparse storage
    # type is not supported', 'only supported for float32 type of parameters'); its device
    # store fails on float16/float64 ('data type do not match specified type') and quantises
    # a row_sparse push's compact data as if dense (a pushed [[.6,-.7],[0,0],[.2,1.2]] lands
    # as [[.5,-.5],[0,.5],[0,0]]), which gpunda refuses instead of reproducing.
    kv = _device_store()
    kv.init(0, nd.zeros((3, 2)))
    g = nd.array([[0.6, -0.7], [0, 0], [0.2, 1.2]]).tostype("row_sparse")
    with pytest.raises(mx.MXNetError, match="row sparse storage type is not supported"):
        kv.push(0, g)
    kv.init(1, nd.zeros(4, dtype="float16"))
    with pytest.raises(mx.MXNetError, match="only supported for float32"):
        kv.push(1, nd.array([0.6, -0.7, 0.2, 1.2], dtype="float16"))


def test_packed_layout_is_mxnets():
    # MXNet's quantize_2bit: value j of a 16-block lives in byte j // 4 of its float32
    # word, bits 7-6 for j % 4 == 0 ... bits 1-0 for j % 4 == 3; 11 = +t, 10 = -t, 00 = 0
    grad = np.zeros(18, np.float32)
    grad[0], grad[5], grad[15], grad[17] = 1.0, -1.0, 1.0, -1.0
    res = np.zeros(18, np.float32)
    words = quantize_2bit(grad, res, 0.5)
    assert words.dtype == np.float32 and words.size == compressed_size(18) == 2
    raw = words.view(np.uint8)
    assert raw.tolist() == [0b11000000, 0b00100000, 0, 0b00000011, 0b00100000, 0, 0, 0]
    np.testing.assert_array_equal(res, np.where(grad > 0, 0.5, np.where(grad < 0, -0.5, 0)))
    np.testing.assert_array_equal(dequantize_2bit(words, 18, 0.5),
                                  np.where(grad > 0, 0.5, np.where(grad < 0, -0.5, 0)))
    # a float32 word carries 16 values: 1000 values pack into 63 words (252 bytes)
    assert quantize_2bit(np.ones(1000, np.float32), np.zeros(1000, np.float32), 0.5).nbytes == 252


def test_gpu_arrays_quantise_on_their_device(standin_gpu):
    # the stand-in gpu(0) follows CuPy's rules: the residual and the packed words stay on
    # the pushing device and only the packed words move (MXNet's CommDevice)
    kv = _device_store()
    kv.init(0, nd.zeros(4))
    o = nd.zeros(4)
    got = []
    for _ in range(2):
        kv.push(0, [nd.array([0.3, -0.3, 0.6, 0.0], ctx=mx.gpu(0)),
                    nd.array([0.3, 0.4, -0.6, 0.9], ctx=mx.cpu(1))])
        kv.pull(0, out=o)
        got.append(o.asnumpy().tolist())
    assert got == [[0.0, 0.0, 0.0, 0.5], [1.0, 0.0, 0.0, 0.5]]   # MXNet's, as above
    assert kv._gc.residuals[(0, 0)].context == mx.gpu(0)


def test_module_on_two_devices_with_compression_params():
    # MXNet 1.9.1, recorded:
    #   net = MakeLoss(sum(FullyConnected(data, num_hidden=1, no_bias=True, name='fc')))
    #   mod = mx.mod.Module(net, data_names=['data'], label_names=None,
    #                       context=[mx.cpu(0), mx.cpu(1)],
    #                       compression_params={'type': '2bit', 'threshold': 0.5})
    #   bind (2, 3); init_params(Zero()); init_optimizer(kvstore='device', optimizer='sgd',
    #   optimizer_params={'learning_rate': 1.0}); two steps on
    #   x = [[0.3, 0.6, -1.0], [0.6, 1.2, -2.0]]
    #   -> [[-0.25, -0.5, 0.5]], then [[-0.75, -1.0, 1.0]]
    data = mx.sym.Variable("data")
    net = mx.sym.MakeLoss(mx.sym.sum(mx.sym.FullyConnected(data, num_hidden=1, no_bias=True,
                                                           name="fc")))
    mod = mx.mod.Module(net, data_names=["data"], label_names=None,
                        context=[mx.cpu(0), mx.cpu(1)],
                        compression_params={"type": "2bit", "threshold": 0.5})
    mod.bind(data_shapes=[("data", (2, 3))])
    mod.init_params(mx.init.Zero())
    mod.init_optimizer(kvstore="device", optimizer="sgd",
                       optimizer_params={"learning_rate": 1.0})
    x = nd.array([[0.3, 0.6, -1.0], [0.6, 1.2, -2.0]])
    got = []
    for _ in range(2):
        mod.forward(mx.io.DataBatch([x]), is_train=True)
        mod.backward()
        mod.update()
        got.append(mod.get_params()[0]["fc_weight"].asnumpy().tolist())
    assert got == [[[-0.25, -0.5, 0.5]], [[-0.75, -1.0, 1.0]]]


@pytest.mark.parametrize("update_on_kvstore", [None, False])
def test_trainer_on_two_devices_with_compression_params(update_on_kvstore):
    # MXNet 1.9.1, recorded for update_on_kvstore None (-> True) and False alike:
    #   net = gluon.nn.Dense(1, in_units=3, use_bias=False)
    #   net.initialize(mx.init.Zero(), ctx=[mx.cpu(0), mx.cpu(1)])
    #   tr = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0}, kvstore='device',
    #                      compression_params={'type': '2bit', 'threshold': 0.5})
    #   x0 = [[0.3, 0.6, -1.0]] on cpu(0), x1 = [[0.6, 1.2, -2.0]] on cpu(1); two steps of
    #   backward(sum(net(x)) per device); tr.step(2)
    #   -> weight [[-0.25, -0.5, 0.5]], then [[-0.75, -1.0, 1.0]]
    net = mx.gluon.nn.Dense(1, in_units=3, use_bias=False)
    net.initialize(mx.init.Zero(), ctx=[mx.cpu(0), mx.cpu(1)])
    tr = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0}, kvstore="device",
                          compression_params={"type": "2bit", "threshold": 0.5},
                          update_on_kvstore=update_on_kvstore)
    xs = [nd.array([[0.3, 0.6, -1.0]], ctx=mx.cpu(0)), nd.array([[0.6, 1.2, -2.0]], ctx=mx.cpu(1))]
    got = []
    for _ in range(2):
        with mx.autograd.record():
            losses = [net(x).sum() for x in xs]
        mx.autograd.backward(losses)
        tr.step(2)
        got.append(net.weight.data(mx.cpu(1)).asnumpy().tolist())
    assert tr._update_on_kvstore is (update_on_kvstore is None)
    assert got == [[[-0.25, -0.5, 0.5]], [[-0.75, -1.0, 1.0]]]


# -- over MPI ------------------------------------------------------------------------------

MPI_SCRIPT = textwrap.dedent('''
    import json
    import sys
    import numpy as np
    import gpunda as mx
    from gpunda import nd

    compress, out_prefix = sys.argv[1] == "2bit", sys.argv[2]
    kv = mx.kv.create("dist_sync")
    r = kv.rank
    res = {}
    if compress:
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    n = 1000
    kv.init(0, nd.zeros(n))
    kv.init(1, nd.zeros(4))
    before = kv._comm.bytes_sent
    g = np.full(n, 0.3 * (r + 1), np.float32)
    kv.push(0, nd.array(g))
    res["bytes"] = kv._comm.bytes_sent - before
    out = nd.zeros(n)
    kv.pull(0, out=out)
    res["first"] = sorted(set(out.asnumpy().tolist()))
    kv.push(0, nd.array(g))
    kv.pull(0, out=out)
    res["second"] = sorted(set(out.asnumpy().tolist()))
    # the residual sequence of the module docstring, pushed by every rank
    o = nd.zeros(4)
    res["seq"] = []
    for gg in ([0.6, -0.7, 0.2, 1.2], [0.6, -0.7, 0.2, 1.2], [0.1, 0.1, 0.1, -3.0]):
        kv.push(1, nd.array(gg))
        kv.pull(1, out=o)
        res["seq"].append(o.asnumpy().tolist())
    with open(f"{out_prefix}-{r}.json", "w") as f:
        json.dump(res, f)
''')


def _run(tmp_path, mode, n=2):
    exe = mpiexec_or_skip()
    script = tmp_path / "kv_compress.py"
    script.write_text(MPI_SCRIPT)
    env = dict(os.environ, GPUNDA_DEFAULT_DEVICE="cpu", GPUNDA_KVSTORE_TIMEOUT="20",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    prefix = str(tmp_path / mode)
    r = subprocess.run([exe, "-n", str(n), sys.executable, str(script), mode, prefix],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return [json.loads(open(f"{prefix}-{k}.json").read()) for k in range(n)]


def test_dist_sync_compressed_push_sends_a_sixteenth_of_the_bytes(tmp_path):
    plain = _run(tmp_path, "none")
    packed = _run(tmp_path, "2bit")
    # uncompressed: the 1000 float32 values (4000 bytes) go to the all-reduce; 2-bit: the
    # 63 packed words (252 bytes) go to the all-gather, on each of the two ranks
    assert [p["bytes"] for p in plain] == [4000, 4000]
    assert [p["bytes"] for p in packed] == [252, 252]
    # sums: 0.3 + 0.6 uncompressed; quantised, rank 0's 0.3 stays in its residual and
    # rank 1's 0.6 sends 0.5; the second push sends 0.5 from both (0.6 and 0.7 residuals)
    assert [p["first"] for p in plain] == [[np.float32(0.3) + np.float32(0.6)]] * 2
    assert [p["first"] for p in packed] == [[0.5], [0.5]]
    assert [p["second"] for p in packed] == [[1.0], [1.0]]
    # every rank pushes the docstring's sequence: the sum is twice one sender's values
    seq = [[1.0, -1.0, 0.0, 1.0], [1.0, -1.0, 0.0, 1.0], [0.0, 0.0, 1.0, -1.0]]
    assert [p["seq"] for p in packed] == [seq, seq]


TRAINER_SCRIPT = textwrap.dedent('''
    import json
    import sys
    import numpy as np
    import gpunda as mx
    from gpunda import autograd, gluon, nd

    kv = mx.kv.create("dist_sync")
    r = kv.rank
    net = gluon.nn.Dense(1, in_units=3, use_bias=False)
    net.initialize(mx.init.Zero())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0}, kvstore=kv,
                            compression_params={"type": "2bit", "threshold": 0.5})
    x = nd.array([[0.3, 0.6, -1.0]]) * (r + 1)
    before = kv._comm.bytes_sent
    weights = []
    for _ in range(2):
        with autograd.record():
            y = net(x).sum()
        y.backward()
        trainer.step(1)
        weights.append(net.weight.data().asnumpy().ravel().tolist())
    with open(f"{sys.argv[1]}-{r}.json", "w") as f:
        json.dump({"weights": weights, "bytes": kv._comm.bytes_sent - before}, f)
''')


def test_trainer_all_reduces_compressed_gradients(tmp_path):
    # Trainer(kvstore='dist_sync', compression_params=...) quantises each rank's gradient
    # with its residual before the all-reduce. Gradients (the input rows): rank 0
    # [0.3, 0.6, -1.0] -> [0, .5, -.5], rank 1 [0.6, 1.2, -2.0] -> [.5, .5, -.5]; the second
    # step adds the residuals: both send [.5, .5, -.5]. The Trainer rescales the summed
    # gradient by 1/batch_size (1, this rank's batch), as MXNet's does; lr 1.
    exe = mpiexec_or_skip()
    script = tmp_path / "trainer_compress.py"
    script.write_text(TRAINER_SCRIPT)
    prefix = str(tmp_path / "trainer")
    env = dict(os.environ, GPUNDA_DEFAULT_DEVICE="cpu", GPUNDA_KVSTORE_TIMEOUT="20",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([exe, "-n", "2", sys.executable, str(script), prefix],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    w1 = -np.array([0.5, 1.0, -1.0])
    w2 = w1 - np.array([1.0, 1.0, -1.0])
    for k in range(2):
        res = json.loads(open(f"{prefix}-{k}.json").read())
        np.testing.assert_allclose(res["weights"], [w1, w2], rtol=1e-6)
        # one packed float32 word per step carries the 3 values (12 bytes uncompressed)
        assert res["bytes"] == 2 * 4
