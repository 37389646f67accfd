"""Second-order gradients of ops whose backward MXNet 1.9.1 registers without FGradient.

Asking for them raises MXNet's own error, naming the backward operator as MXNet does.
Recorded from MXNet 1.9.1 (CPU) with:

    x = nd.random.uniform(shape=...); x.attach_grad()
    with autograd.record():
        g = autograd.grad(f(x), [x], create_graph=True, retain_graph=True)[0]
        z = (g * g).sum()
    z.backward()   # MXNetError: Operator <name> is non-differentiable because it didn't
                   # register FGradient attribute.
"""
import pytest

from gpunda import autograd, nd
from gpunda.base import MXNetError

CASES = {
    "_backward_ctc_loss": ((2, 3, 4), lambda x: nd.contrib.CTCLoss(x, nd.array([[1, 0]] * 3))),
    "_backward_Correlation": ((1, 2, 3, 4), lambda x: nd.Correlation(
        x, x * 2, kernel_size=1, max_displacement=1, pad_size=1)),
    "_backward_BilinearSampler": ((1, 2, 3, 4), lambda x: nd.BilinearSampler(
        x, nd.zeros((1, 2, 3, 4)))),
    "_backward__contrib_DeformableConvolution": ((1, 2, 3, 4), lambda x:
        nd.contrib.DeformableConvolution(x, nd.zeros((1, 18, 3, 4)), nd.ones((2, 2, 3, 3)),
                                         kernel=(3, 3), pad=(1, 1), num_filter=2,
                                         no_bias=True)),
    "_backward_RNN": ((2, 3, 4), lambda x: nd.RNN(x, nd.ones((7,)), nd.zeros((1, 3, 1)),
                                                  state_size=1, num_layers=1,
                                                  mode="rnn_tanh")),
}


@pytest.mark.parametrize("backward_name", sorted(CASES))
def test_second_order_raises_mxnet_error(backward_name):
    shape, f = CASES[backward_name]
    x = nd.random.uniform(shape=shape)
    x.attach_grad()
    before = x.asnumpy().copy()
    with pytest.raises(MXNetError) as err:
        with autograd.record():
            g = autograd.grad(f(x), [x], create_graph=True, retain_graph=True)[0]
            z = (g * g).sum()
        z.backward()
    assert str(err.value).startswith(
        f"Operator {backward_name} is non-differentiable because it didn't register "
        f"FGradient attribute.")
    assert (x.asnumpy() == before).all()
