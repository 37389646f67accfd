"""BucketingModule (buckets share parameters), SequentialModule and PythonLossModule."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError


def _sym_gen(seq_len):
    # (N, seq_len, 4) -> FC over the last axis (weights independent of seq_len) -> mean
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("label")
    h = mx.sym.FullyConnected(data, num_hidden=2, flatten=False, name="fc")
    out = mx.sym.mean(h, axis=1)
    return mx.sym.LinearRegressionOutput(out, label, name="lro"), ("data",), ("label",)


def _batch(key, n=3, seed=0):
    rng = np.random.RandomState(seed + key)
    x = rng.randn(n, key, 4).astype(np.float32)
    y = rng.randn(n, 2).astype(np.float32)
    return x, y, mx.io.DataBatch(
        [mx.nd.array(x)], [mx.nd.array(y)], bucket_key=key,
        provide_data=[mx.io.DataDesc("data", (n, key, 4))],
        provide_label=[mx.io.DataDesc("label", (n, 2))])


def test_bucketing_module_two_keys_share_parameters():
    mod = mx.mod.BucketingModule(_sym_gen, default_bucket_key=5)
    mod.bind([("data", (3, 5, 4))], [("label", (3, 2))])
    mod.init_params(mx.init.Normal(0.5))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    w0 = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    b0 = mod.get_params()[0]["fc_bias"].asnumpy().copy()
    x, y, batch = _batch(2)
    mod.forward_backward(batch)
    mod.update()
    assert sorted(mod._buckets) == [2, 5]
    small, big = mod._buckets[2], mod._buckets[5]
    assert small._exec_group.execs[0].arg_dict["fc_weight"] is \
        big._exec_group.execs[0].arg_dict["fc_weight"]
    # the update of bucket 2 is SGD with LinearRegressionOutput's gradient (out - y) / 2,
    # rescaled by 1/batch_size
    out = (x @ w0.T + b0).mean(axis=1)
    d_out = (out - y) / 2 / 3     # MXNet divides by the outputs per sample (2)
    grad_w = np.einsum("nj,ntk->jk", d_out, x) / 2
    grad_b = d_out.sum(0)
    w1 = mod.get_params()[0]["fc_weight"].asnumpy()
    np.testing.assert_allclose(w1, w0 - 0.1 * grad_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mod.get_params()[0]["fc_bias"].asnumpy(), b0 - 0.1 * grad_b,
                               rtol=1e-5, atol=1e-6)
    # bucket 5 predicts with the updated weights
    x5, _, batch5 = _batch(5)
    mod.forward(batch5, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                               (x5 @ w1.T + mod.get_params()[0]["fc_bias"].asnumpy())
                               .mean(axis=1), rtol=1e-5, atol=1e-6)
    assert mod.symbol.list_arguments() == ["data", "fc_weight", "fc_bias", "label"]


def test_bucketing_checkpoint_round_trip(tmp_path):
    mod = mx.mod.BucketingModule(_sym_gen, default_bucket_key=5)
    mod.bind([("data", (3, 5, 4))], [("label", (3, 2))])
    mod.init_params(mx.init.Normal(0.5))
    mod.forward(_batch(2)[2], is_train=False)
    prefix = str(tmp_path / "bk")
    mod.save_checkpoint(prefix, 1)
    for f in ("bk-0001.params", "bk-2-symbol.json", "bk-5-symbol.json", "bk.buckets"):
        assert (tmp_path / f).exists()
    mod2 = mx.mod.BucketingModule.load(prefix, 1, sym_gen=_sym_gen, default_bucket_key=5)
    mod2.bind([("data", (3, 5, 4))], [("label", (3, 2))])
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(mod2.get_params()[0][k].asnumpy(), v.asnumpy())
    with pytest.raises(GpundaError, match="default_bucket_key"):
        mx.mod.BucketingModule.load(prefix, 1, sym_gen=_sym_gen)


def test_bucketing_module_needs_a_default_key():
    with pytest.raises(GpundaError, match="default_bucket_key"):
        mx.mod.BucketingModule(_sym_gen)


def _fc_module(name, num_hidden, data_name):
    data = mx.sym.Variable(data_name)
    fc = mx.sym.FullyConnected(data, num_hidden=num_hidden, name=name)
    return mx.mod.Module(fc, data_names=[data_name], label_names=None)


def test_sequential_module_with_python_loss_matches_numpy_gradients():
    rng = np.random.RandomState(0)
    x = rng.randn(4, 3).astype(np.float32)
    y = rng.randn(4, 2).astype(np.float32)

    def squared_loss_grad(scores, labels):
        return scores - labels      # d/ds of 0.5 * |s - y|^2

    seq = mx.mod.SequentialModule()
    seq.add(_fc_module("fc1", 5, "data")).add(_fc_module("fc2", 2, "hidden"),
                                              auto_wiring=True)
    seq.add(mx.mod.PythonLossModule(data_names=["scores"], label_names=["label"],
                                    grad_func=squared_loss_grad),
            take_labels=True, auto_wiring=True)
    seq.bind([("data", (4, 3))], [("label", (4, 2))])
    seq.init_params(mx.init.Normal(0.5))
    seq.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 1.0,
                                                          "rescale_grad": 1.0})
    p = {k: v.asnumpy().copy() for k, v in seq.get_params()[0].items()}
    seq.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
    h = x @ p["fc1_weight"].T + p["fc1_bias"]
    s = h @ p["fc2_weight"].T + p["fc2_bias"]
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), s, rtol=1e-5, atol=1e-6)
    seq.backward()
    seq.update()
    g_s = s - y
    expected_fc1 = p["fc1_weight"] - (g_s @ p["fc2_weight"]).T @ x
    expected_fc2 = p["fc2_weight"] - g_s.T @ h
    got = seq.get_params()[0]
    np.testing.assert_allclose(got["fc2_weight"].asnumpy(), expected_fc2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["fc1_weight"].asnumpy(), expected_fc1, rtol=1e-4, atol=1e-5)
    metric = mx.metric.MSE()
    seq.update_metric(metric, [mx.nd.array(y)])
    assert metric.get()[1] == pytest.approx(np.mean((s - y) ** 2), rel=1e-4)


def test_sequential_module_errors():
    seq = mx.mod.SequentialModule()
    with pytest.raises(GpundaError, match="empty"):
        seq.bind([("data", (4, 3))])
    with pytest.raises(GpundaError, match="take_lables"):
        seq.add(_fc_module("fc1", 5, "data"), take_lables=True)
    a = _fc_module("fc", 5, "data")
    b = _fc_module("fc", 5, "hidden")       # the same parameter names
    seq = mx.mod.SequentialModule().add(a).add(b, auto_wiring=True)
    seq.bind([("data", (4, 3))])
    with pytest.raises(GpundaError, match="Duplicated parameter names"):
        seq.init_params()


def test_python_loss_module_checks():
    with pytest.raises(GpundaError, match="callable"):
        mx.mod.PythonLossModule(grad_func=3)
    loss = mx.mod.PythonLossModule()
    with pytest.raises(GpundaError, match="data_names"):
        loss.bind([("other", (2, 2))], [("softmax_label", (2,))])


def test_mxnet_alias_maps_mod_module_and_submodules(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    script = tmp_path / "s.py"
    script.write_text(
        "import mxnet as mx\n"
        "import mxnet.module.base_module as bm\n"
        "from mxnet.module.executor_group import DataParallelExecutorGroup\n"
        "import gpunda\n"
        "assert mx.mod is mx.module is gpunda.module\n"
        "assert bm.BaseModule is mx.mod.BaseModule\n"
        "assert DataParallelExecutorGroup.__module__ == 'gpunda.module.executor_group'\n"
        "assert mx.mon.Monitor is mx.monitor.Monitor and mx.callback.Speedometer\n"
        "print('ok')\n")
    repo = Path(__file__).resolve().parent.parent
    env = {"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    r = subprocess.run([sys.executable, "-m", "gpunda", "run", str(script)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_import_gpunda_does_not_load_the_module_stack():
    import subprocess
    import sys
    # logging (with traceback and atexit) is not loaded either: mx.model defers it
    code = ("import sys, gpunda; print(any(m in sys.modules for m in "
            "('gpunda.module', 'gpunda.callback', 'gpunda.monitor', 'logging')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.stdout.strip() == "False", r.stderr


def test_sparse_module_trains_row_sparse_weights():
    # csr data x row_sparse weight: the weight gradient and the update are row_sparse
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("w", shape=(6, 1), stype="row_sparse", init=mx.init.One())
    out = mx.sym.LinearRegressionOutput(mx.sym.sparse.dot(x, w), name="out")
    dense = np.zeros((4, 6), np.float32)
    dense[0, 1], dense[1, 1], dense[2, 4], dense[3, 4] = 1, 2, 1, 3
    label = np.zeros((4, 1), np.float32)
    it = mx.io.NDArrayIter(mx.nd.array(dense).tostype("csr"), {"out_label": label},
                           batch_size=4, last_batch_handle="discard")
    mod = mx.mod.Module(out, data_names=["data"], label_names=["out_label"])
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    assert mod._arg_params["w"].stype == "row_sparse"
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "rescale_grad": 1.0})
    batch = next(iter(it))
    mod.forward_backward(batch)
    g = mod._exec_group.grad_arrays[0][0]
    assert g.stype == "row_sparse"
    pred = dense.sum(axis=1, keepdims=True)            # x @ ones
    expected = dense.T @ (pred - label)                  # d/dw of 0.5 |xw - y|^2
    np.testing.assert_allclose(g.asnumpy(), expected, rtol=1e-6)
    mod.update()
    np.testing.assert_allclose(mod.get_params()[0]["w"].asnumpy(), 1 - 0.1 * expected,
                               rtol=1e-6)


def test_contrib_sparse_embedding_gives_row_sparse_gradient():
    w = mx.nd.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    w.attach_grad(stype="row_sparse")
    idx = mx.nd.array([[0, 2], [2, 3]])
    with mx.autograd.record():
        y = mx.nd.contrib.SparseEmbedding(idx, w, input_dim=4, output_dim=3)
    np.testing.assert_array_equal(y.asnumpy(), w.asnumpy()[[[0, 2], [2, 3]]])
    y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.asnumpy(), np.array([[1] * 3, [0] * 3, [2] * 3,
                                                              [1] * 3], np.float32))
