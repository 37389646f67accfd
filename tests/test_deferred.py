"""Kernel-time op errors surface at the next wait, travel with the data, are raised once
(NOTE [Deferred op errors]); MXNet 1.9.1's test_exc_handling.py observed behaviour."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd


@pytest.fixture(autouse=True)
def _clean():
    yield
    try:
        nd.waitall()
    except mx.MXNetError:
        pass


def test_sampler_error_is_deferred_to_the_read():
    b = nd.random.normal(0, -1, (2, 2))           # no error yet, as in MXNet
    assert b.shape == (2, 2) and b.dtype == np.float32
    with pytest.raises(mx.MXNetError, match="scale=-1.0 must be > 0"):
        b.asnumpy()


def test_error_follows_the_data_into_later_ops():
    a = nd.ones((2, 2))
    b = nd.random.normal(0, -1, (2, 2))
    c = nd.dot(a, b) + 1                            # general invoke, then a scalar op
    d = nd.relu(c) * a                              # unary and binary fast paths
    with pytest.raises(mx.MXNetError, match="scale"):
        d.wait_to_read()
    assert a.asnumpy().tolist() == [[1, 1], [1, 1]]   # inputs never corrupted


def test_reported_once_for_every_array_it_reached():
    a, b = nd.random_normal(0, -1, (2, 2)).copyto(mx.cpu())   # views of a failed array
    with pytest.raises(mx.MXNetError):
        a.asnumpy()
    assert b.asnumpy().shape == (2,)                # cleared: undefined values, no error
    nd.waitall()                                    # nothing pending any more


def test_waitall_raises_first_pending_then_nothing():
    a = nd.random.uniform(1, 0, (3,))
    with pytest.raises(mx.MXNetError, match="low=1.0 must be <= high=0.0"):
        nd.waitall()
    nd.waitall()
    assert a.asnumpy().shape == (3,)


def test_failed_sampler_poisons_its_device_generator_until_reported():
    nd.random.gamma(-1, 1, shape=(2,))              # dropped unread, error still pending
    x = nd.random.uniform(0, 1, shape=(3,))         # same generator: fails with that error
    with pytest.raises(mx.MXNetError, match="alpha=-1.0 must be > 0"):
        x.asnumpy()
    y = nd.random.uniform(0, 1, shape=(3,))         # reported: the generator works again
    assert ((y.asnumpy() >= 0) & (y.asnumpy() < 1)).all()
    nd.waitall()


def test_structural_use_of_a_failed_array_works():
    b = nd.random.normal(0, -1, (2, 3))
    assert b.reshape((3, 2)).shape == (3, 2) and b[1].shape == (3,) and len(b) == 2
    with pytest.raises(mx.MXNetError):
        b[1].asnumpy()


def test_gluon_forward_on_failed_input():
    net = mx.gluon.nn.Sequential()
    net.add(mx.gluon.nn.Dense(4, in_units=3), mx.gluon.nn.Dropout(1))
    net.initialize()
    z = net(nd.random.normal(0, -1, (2, 3)))
    with pytest.raises(mx.MXNetError):
        z.wait_to_read()


def test_sync_errors_stay_sync():
    with pytest.raises(mx.MXNetError, match="shape"):
        nd.random.normal(0, 1, shape=(-1, 2))
    with pytest.raises(mx.MXNetError):
        nd.dot(nd.ones((2, 3)), nd.ones((2, 3)))


def test_executor_step_error_is_deferred_to_the_output_read():
    # MXNet 1.9.1: forward returns, reading the output raises, then samplers work again
    s = mx.sym.random.normal(0, -1, shape=(2,))
    outs = s.bind(mx.cpu(), {}).forward()
    with pytest.raises(mx.MXNetError, match="scale"):
        outs[0].asnumpy()
    nd.waitall()
    assert nd.random.normal(0, 1, shape=(2,)).asnumpy().shape == (2,)


def test_out_argument_reports_at_the_write():
    o = nd.zeros((2,))
    with pytest.raises(mx.MXNetError, match="scale"):
        nd.random.normal(0, -1, shape=(2,), out=o)
    nd.waitall()                                    # reported there: nothing pending


def test_library_refusing_a_poisoned_input_still_propagates(monkeypatch):
    from gpunda._engine import imperative
    from gpunda.ops.registry import get_op
    op = get_op("sqrt")
    real = op.compute

    from gpunda._core.deferred import Poisoned

    def picky(xp, p, x):
        if isinstance(x, Poisoned):
            raise TypeError("Unsupported type")     # what CuPy says for a foreign object
        return real(xp, p, x)
    monkeypatch.setattr(op, "compute", picky)
    imperative.refresh_fast_paths()
    try:
        y = nd.sqrt(nd.random.normal(0, -1, shape=(2,)))
        with pytest.raises(mx.MXNetError, match="scale"):
            y.asnumpy()
    finally:
        monkeypatch.undo()
        imperative.refresh_fast_paths()


def test_a_failure_reaching_the_gradients_is_reported_once():
    # MXNet's test_exc_symbolic: the backward of a graph whose sampler failed leaves the
    # failure on the gradient arrays; the next wait reports it, and it is gone after
    x, z = mx.sym.Variable("x"), mx.sym.Variable("z")
    out = mx.sym.make_loss(mx.sym.dot(mx.sym.dot(z, x), mx.sym.random.normal(0, -1, (2, 2))))
    args = {"x": mx.nd.ones((2, 2)), "z": mx.nd.ones((3, 2))}
    grads = {"x": mx.nd.zeros((2, 2)), "z": mx.nd.zeros((3, 2))}
    for read in ("waitall", "grad"):
        exe = out.bind(mx.cpu(), args=args, args_grad=grads)
        exe.forward(is_train=True)
        exe.backward()
        with pytest.raises(mx.MXNetError, match="scale=-1.0"):
            mx.nd.waitall() if read == "waitall" else exe.grad_arrays[0].asnumpy()
        mx.nd.waitall()      # reported: nothing is pending any more
