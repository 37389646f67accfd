"""gpunda.optimizer is a package as MXNet's: optimizer.optimizer, optimizer.contrib."""
import numpy as np
import pytest

import gpunda as mx


def test_package_layout_is_mxnets():
    import gpunda.optimizer.contrib as contrib
    import gpunda.optimizer.optimizer as optimizer
    assert mx.optimizer.optimizer is optimizer and mx.optimizer.contrib is contrib
    assert mx.optimizer.SGD is optimizer.SGD
    assert mx.optimizer.GroupAdaGrad is contrib.GroupAdaGrad
    assert isinstance(mx.optimizer.create("groupadagrad"), contrib.GroupAdaGrad)


def test_group_adagrad_matches_mxnet():
    # recorded from MXNet 1.9.1 (/work/mxref): two updates of the same dense gradient
    w = mx.nd.array([[1., 2., 3.], [0.5, -1., 2.]])
    g = mx.nd.array([[0.3, -0.2, 0.1], [1., 2., -3.]])
    opt = mx.optimizer.contrib.GroupAdaGrad(learning_rate=0.1, eps=1e-6, clip_gradient=1.5,
                                            rescale_grad=0.5)
    state = opt.create_state(0, w)
    for _ in range(2):
        opt.update(0, w, g, state)
    np.testing.assert_allclose(w.asnumpy(), [[0.7629369497, 2.1580419540, 2.9209790229],
                                             [0.4209763407, -1.1580473184, 2.2370707988]],
                               rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy(), [[0.0233333334], [2.3333332538]], rtol=1e-6)


def test_group_adagrad_bad_input():
    opt = mx.optimizer.contrib.GroupAdaGrad()
    with pytest.raises(mx.MXNetError, match="2-D"):
        opt.create_state(0, mx.nd.ones((3,)))
    opt = mx.optimizer.contrib.GroupAdaGrad(wd=0.1)
    w = mx.nd.ones((2, 2))
    with pytest.raises(mx.MXNetError, match="weight decay"):
        opt.update(0, w, mx.nd.ones((2, 2)), opt.create_state(0, w))


def test_lr_scheduler_module_has_pi():
    import math
    from gpunda import lr_scheduler
    assert lr_scheduler.pi == math.pi       # MXNet's lr_scheduler does `from math import pi`
    sched = lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.0)
    assert sched(5) == pytest.approx((1 + math.cos(lr_scheduler.pi * 5 / 10)) / 2)


def test_flatten_list_and_as_classic_match_mxnet():
    # answers recorded from MXNet 1.9.1 (/work/mxref)
    from gpunda.optimizer import optimizer as O
    assert O._flatten_list(zip([1, 2], ["a", "b"], [None, 3.5])) == [1, "a", None, 2, "b", 3.5]
    a, b = mx.np.array([1., 2.]), mx.nd.array([3.])
    r = O._as_classic(a, True)
    assert type(r) is mx.nd.NDArray and r.asnumpy().tolist() == [1.0, 2.0]
    assert [type(x) for x in O._as_classic([a, b], True)] == [mx.nd.NDArray, mx.nd.NDArray]
    assert O._as_classic(b, False) is b
    lst = [b]
    assert O._as_classic(lst, False) is lst
    for x in (a, [a, b]):
        with pytest.raises(ValueError, match="Converting np.ndarray to mx.nd.NDArray is not "
                                             "allowed"):
            O._as_classic(x, False)
