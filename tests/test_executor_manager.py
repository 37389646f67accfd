"""mx.executor_manager against answers recorded from MXNet 1.9.1 (/work/mxref, the same
network, parameters and batch on two CPU contexts)."""
import logging

import numpy as np
import pytest

import gpunda as mx
from gpunda import executor_manager as em


def test_split_input_slice_matches_mxnet():
    spans = lambda ss: [(s.start, s.stop) for s in ss]  # noqa: E731
    assert spans(em._split_input_slice(10, [1, 2, 2])) == [(0, 2), (2, 6), (6, 10)]
    assert spans(em._split_input_slice(7, [1, 1, 1])) == [(0, 2), (2, 4), (4, 7)]
    with pytest.raises(ValueError, match="empty"):
        em._split_input_slice(2, [1, 1, 1])


def test_check_arguments_finds_duplicates():
    data = mx.sym.var("data")
    net = (mx.sym.FullyConnected(data, num_hidden=2, name="a")
           + mx.sym.FullyConnected(data, num_hidden=2, name="a"))
    with pytest.raises(ValueError, match='duplicated argument name "a_weight"'):
        em._check_arguments(net)


def _net():
    data, label = mx.sym.var("data"), mx.sym.var("softmax_label")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    bn = mx.sym.BatchNorm(fc, name="bn", fix_gamma=False)
    return mx.sym.SoftmaxOutput(bn, label, name="softmax")


def test_data_parallel_training_step_matches_mxnet():
    net = _net()
    X = np.arange(24, dtype="float32").reshape(6, 4) / 10.
    it = mx.io.NDArrayIter(X, np.array([0, 1, 2, 1, 0, 2], dtype="float32"), batch_size=6)
    args = net.list_arguments()
    params = [n for n in args if n not in ("data", "softmax_label")]
    mgr = em.DataParallelExecutorManager(net, [mx.cpu(0), mx.cpu(1)], it, args, params,
                                         net.list_auxiliary_states(), work_load_list=[1, 2])
    assert [(s.start, s.stop) for s in mgr.slices] == [(0, 2), (2, 6)]
    assert mgr.param_names == ["fc_weight", "fc_bias", "bn_gamma", "bn_beta"]
    arg_params = {"fc_weight": mx.nd.array(np.linspace(-1, 1, 12).reshape(3, 4)),
                  "fc_bias": mx.nd.array([0.1, -0.2, 0.3]),
                  "bn_gamma": mx.nd.array([1., 2., 0.5]), "bn_beta": mx.nd.array([0., .1, -.1])}
    aux_params = {"bn_moving_mean": mx.nd.zeros(3), "bn_moving_var": mx.nd.ones(3)}
    mgr.set_params(arg_params, aux_params)
    batch = next(iter(it))
    mgr.load_data_batch(batch)
    mgr.forward(is_train=True)
    mgr.backward()
    outs = [e.outputs[0].asnumpy() for e in mgr.execgrp.train_execs]
    np.testing.assert_allclose(outs[0], [[0.621306, 0.252977, 0.125717],
                                         [0.124286, 0.372824, 0.50289]], atol=2e-6)
    np.testing.assert_allclose(outs[1], [[0.709202, 0.204977, 0.085822],
                                         [0.460941, 0.32577, 0.213289],
                                         [0.222342, 0.384252, 0.393406],
                                         [0.083391, 0.352408, 0.564201]], atol=2e-6)
    grads = dict(zip(mgr.param_names, mgr.grad_arrays))
    np.testing.assert_allclose([g.asnumpy() for g in grads["bn_gamma"]],
                               [[-0.502238, 0.0, 0.376617], [1.393119, 0.0, 0.722151]],
                               atol=1e-5)
    np.testing.assert_allclose([g.asnumpy() for g in grads["bn_beta"]],
                               [[-0.254408, -0.374199, 0.628607],
                                [0.475877, 0.267406, -0.743283]], atol=1e-5)
    metric = mx.metric.Accuracy()
    mgr.update_metric(metric, batch.label)
    assert metric.get() == ("accuracy", pytest.approx(1 / 3))
    res_a = {k: mx.nd.zeros(v.shape) for k, v in arg_params.items()}
    res_x = {k: mx.nd.zeros(v.shape) for k, v in aux_params.items()}
    mgr.copy_to(res_a, res_x)           # the devices' average
    np.testing.assert_allclose(res_x["bn_moving_mean"].asnumpy(),
                               [-0.257273, -0.010909, 0.315455], atol=1e-5)
    np.testing.assert_allclose(res_x["bn_moving_var"].asnumpy(),
                               [1.001554, 0.9, 1.001554], atol=1e-5)
    np.testing.assert_allclose(res_a["bn_gamma"].asnumpy(), [1., 2., 0.5])


def test_bucketing_shares_parameters_and_data_arrays():
    def sym_gen(key):
        data = mx.sym.var("data")
        return mx.sym.FullyConnected(mx.sym.reshape(data, shape=(0, -1)), num_hidden=2,
                                     name="fc", flatten=False)

    class Batch:
        def __init__(self, n):
            self.data = [mx.nd.ones((4, n))]
            self.label = []
            self.provide_data = [("data", (4, n))]
            self.provide_label = []
            self.bucket_key = n

    class Iter:
        batch_size = 4
        default_bucket_key = 3
        provide_data = [("data", (4, 3))]
        provide_label = []

    sym = sym_gen(3)
    # a smaller bucket reshapes the shared (4, 3) data array to (4, 2): a ValueError on
    # MXNet 1.9.1 too (NDArray.reshape needs the same size)
    with pytest.raises(ValueError, match="reshape|Reshape"):
        mgr = em.DataParallelExecutorManager(sym, [mx.cpu(0)], Iter(), sym.list_arguments(),
                                             ["fc_weight", "fc_bias"], [], sym_gen=sym_gen,
                                             logger=logging.getLogger("t"))
        mgr.load_data_batch(Batch(2))
    mgr = em.DataParallelExecutorManager(sym, [mx.cpu(0)], Iter(), sym.list_arguments(),
                                         ["fc_weight", "fc_bias"], [], sym_gen=sym_gen)
    mgr.set_params({"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros(2)}, {})
    mgr.load_data_batch(Batch(3))
    mgr.forward()
    np.testing.assert_allclose(mgr.curr_execgrp.train_execs[0].outputs[0].asnumpy(),
                               np.full((4, 2), 3.))
    first = mgr.curr_execgrp
    mgr.load_data_batch(Batch(3))
    assert mgr.curr_execgrp is first
    with pytest.raises(NotImplementedError, match="bucketing"):
        mgr.install_monitor(None)
