"""mx.contrib.autograd (MXNet's first autograd API) and the lazy mx.contrib package.

Expected gradients are closed-form NumPy derivatives."""
import subprocess
import sys

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda.base import GpundaError
from gpunda.contrib import autograd as cag

nd = mx.nd


def test_contrib_package_loads_submodules_lazily():
    code = ("import sys, gpunda; assert 'gpunda.contrib' not in sys.modules; "
            "import gpunda.contrib; "
            "assert 'gpunda.contrib.autograd' not in sys.modules; "
            "gpunda.contrib.autograd; assert 'gpunda.contrib.autograd' in sys.modules; "
            "assert gpunda.contrib.nd is gpunda.nd.contrib")
    subprocess.run([sys.executable, "-c", code], check=True)
    with pytest.raises(AttributeError):
        mx.contrib.no_such_module


def test_sections_set_recording_and_training_together():
    assert cag.set_is_training(True) is False
    assert ag.is_recording() and ag.is_training()
    assert cag.set_is_training(False) is True
    with cag.train_section():
        assert ag.is_recording() and ag.is_training()
        with cag.test_section():
            assert not ag.is_recording() and not ag.is_training()
        assert ag.is_recording() and ag.is_training()
    assert not ag.is_recording() and not ag.is_training()


def test_grad_and_loss_and_argnum(rng):
    av, bv = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (3, 2))
    a, b = nd.array(av, dtype="float64"), nd.array(bv, dtype="float64")
    grads, out = cag.grad_and_loss(lambda x, y: x * y + nd.exp(x))(a, b)
    np.testing.assert_allclose(out.asnumpy(), av * bv + np.exp(av))
    np.testing.assert_allclose(grads[0].asnumpy(), bv + np.exp(av))
    np.testing.assert_allclose(grads[1].asnumpy(), av)
    (gb,) = cag.grad(lambda x, y, mode: x * y if mode else x + y, argnum=[1])(a, b, True)
    np.testing.assert_allclose(gb.asnumpy(), av)
    with pytest.raises(GpundaError, match="argument 0 must be an NDArray"):
        cag.grad(lambda x: x * 2)(3.0)


def test_backward_takes_lists_with_out_grads():
    x = nd.ones((3, 2), dtype="float64")
    dx = nd.zeros_like(x)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        a, b, c = nd.split(x, axis=0, num_outputs=3, squeeze_axis=True)
        cag.backward([a, b, c], [None, nd.array([1.0, 2.0], dtype="float64"),
                                 nd.array([5.0, 4.0], dtype="float64")])
    np.testing.assert_array_equal(dx.asnumpy(), [[1, 1], [1, 2], [5, 4]])
    with pytest.raises(GpundaError, match="list or tuple"):
        cag.backward(a)
    with pytest.raises(GpundaError, match="2 out_grads for 1 outputs"):
        cag.backward([a], [None, None])


def test_compute_gradient_and_retain_graph():
    x = nd.array([1.0, 2.0], dtype="float64")
    dx = nd.zeros_like(x)
    cag.mark_variables([x], [dx], grad_reqs="add")
    with cag.train_section():
        y = x * x
    cag.backward([y], retain_graph=True)
    cag.compute_gradient([y])
    np.testing.assert_array_equal(dx.asnumpy(), [4.0, 8.0])
    with pytest.raises(GpundaError, match="freed"):
        cag.compute_gradient([y])
