"""mx.monitor.Monitor on a Module: forward outputs, backward input gradients, arguments."""
import logging

import numpy as np
import pytest

import gpunda as mx


def _net():
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    x = mx.sym.Activation(x, act_type="sigmoid", name="act")
    return mx.sym.LinearRegressionOutput(x, name="lro")


W = np.array([[0.15, 0.20], [0.25, 0.30]], np.float32)
B = np.array([0.35, 0.35], np.float32)
X = np.array([[0.05, 0.10]], np.float32)
Y = np.array([[0.01, 0.99]], np.float32)


def _module(mon):
    mod = mx.mod.Module(_net(), label_names=["lro_label"])
    mod.bind([("data", (1, 2))], [("lro_label", (1, 2))])
    mod.install_monitor(mon)
    mod.init_params(arg_params={"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(B)})
    return mod


def _batch():
    return mx.io.DataBatch([mx.nd.array(X)], [mx.nd.array(Y)])


def _sum(x):
    return mx.nd.sum(x)


def test_monitor_reports_outputs_gradients_and_arguments():
    mon = mx.mon.Monitor(1, stat_func=_sum, pattern=".*")
    mod = _module(mon)
    mon.tic()
    mod.forward_backward(_batch())
    res = {k: float(v) for _, k, v in mon.toc()}
    fc = X @ W.T + B
    act = 1 / (1 + np.exp(-fc))
    d_act = (act - Y) / 2               # LinearRegressionOutput: (out - label) / outputs
    d_fc = d_act * act * (1 - act)
    expected = {
        "fc_output": fc.sum(), "act_output": act.sum(), "lro_output": act.sum(),
        "lro_backward_output0": d_act.sum(), "lro_backward_output1": 0.0,
        "act_backward_output": d_fc.sum(),
        "fc_backward_output0": (d_fc @ W).sum(), "fc_backward_output1": (d_fc.T @ X).sum(),
        "fc_backward_output2": d_fc.sum(),
        "data": X.sum(), "fc_weight": W.sum(), "fc_bias": B.sum(), "lro_label": Y.sum()}
    assert set(res) == set(expected)
    for k, v in expected.items():
        assert res[k] == pytest.approx(float(v), rel=1e-5, abs=1e-7), k
    # the monitored backward did not disturb the real one
    grads = mod._exec_group.execs[0].grad_dict
    np.testing.assert_allclose(grads["fc_weight"].asnumpy(), d_fc.T @ X, rtol=1e-5)


def test_monitor_interval_pattern_sort_and_print(caplog):
    mon = mx.monitor.Monitor(2, pattern="fc_.*", sort=True)
    mod = _module(mon)
    steps = []
    for _ in range(3):
        mon.tic()
        mod.forward(_batch(), is_train=False)
        steps.append(mon.toc())
    assert steps[1] == []                       # only every 2nd batch is collected
    names = [k for _, k, _ in steps[0]]
    assert names == sorted(names) and names == ["fc_bias", "fc_output", "fc_weight"]
    # the default stat is norm(x) / sqrt(size)
    w = dict((k, v) for _, k, v in steps[2])["fc_weight"]
    assert float(w) == pytest.approx(np.linalg.norm(W) / 2, rel=1e-6)
    mon.tic()
    assert mon.toc() == []
    mon.tic()
    mod.forward(_batch(), is_train=False)
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    assert any(r.getMessage().startswith("Batch:       5 fc_bias") for r in caplog.records)


def test_monitor_all_reports_inputs():
    mon = mx.mon.Monitor(1, stat_func=_sum, monitor_all=True)
    mod = _module(mon)
    mon.tic()
    mod.forward(_batch(), is_train=False)
    names = [k for _, k, _ in mon.toc()]
    assert names[:4] == ["data", "fc_data", "fc_weight", "fc_weight"]
    assert "act_output" in names


def test_monitor_stat_func_must_give_ndarrays():
    mon = mx.mon.Monitor(1, stat_func=lambda x: 3.0)
    mod = _module(mon)
    mon.tic()
    mod.forward(_batch(), is_train=False)
    with pytest.raises(TypeError, match="stat_func"):
        mon.toc()
