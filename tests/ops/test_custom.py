"""Loss heads make_loss / MakeLoss (gpunda/ops/control_flow/custom.py): values pass through; the
gradient is the loss's own, as MXNet 1.9.1 computes it (values observed on MXNet)."""
import numpy as np
import pytest

import gpunda as mx

X = np.array([[1.0, -2.0, 3.0], [0.5, -1.0, 2.0]], dtype=np.float32)


@pytest.mark.parametrize("kw,expect", [
    ({}, 1.0),
    ({"normalization": "batch", "grad_scale": 2.0}, 2.0 / 2),
    ({"normalization": "valid"}, 1.0 / 4),          # 4 entries above valid_thresh=0
    ({"normalization": "valid", "valid_thresh": 5.0}, 1.0),   # none valid: divide by 1
])
def test_make_loss_gradient_ignores_the_head_gradient(kw, expect):
    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.MakeLoss(x, **kw)
    y.backward(mx.nd.ones(X.shape) * 7)
    np.testing.assert_array_equal(y.asnumpy(), X)
    np.testing.assert_allclose(x.grad.asnumpy(), np.full(X.shape, expect))


def test_make_loss_chains_into_the_graph():
    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.make_loss(x * x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * X)
    with mx.name.NameManager():
        assert mx.sym.make_loss(mx.sym.var("a")).list_outputs() == ["make_loss0_loss"]
        assert mx.sym.MakeLoss(mx.sym.var("a")).list_outputs() == ["makeloss0_output"]
