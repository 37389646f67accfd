"""mx.operator's deprecated PythonOp / NumpyOp / NDArrayOp (gpunda/_frontend/legacy_op.py).

References: NumPy softmax and its cross-entropy gradient (y - onehot), finite
differences, and MXNet 1.9.1's observed behaviour (warnings, node names, attrs, the
default forward/backward, out_grad == [] without need_top_grad).
"""
import warnings

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, nd
from gpunda.base import GpundaError

pytestmark = pytest.mark.filterwarnings("ignore:.*has been deprecated:UserWarning")


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class NumpySoftmax(mx.operator.NumpyOp):
    """MXNet's old example/numpy-ops/numpy_softmax.py: a loss layer written in NumPy."""

    def __init__(self):
        super().__init__(False)
        self.seen_out_grad = None

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]]

    def forward(self, in_data, out_data):
        x, y = in_data[0], out_data[0]
        y[:] = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))

    def backward(self, out_grad, in_data, out_data, in_grad):
        self.seen_out_grad = out_grad
        lab = in_data[1].astype(np.int64)
        dx = in_grad[0]
        dx[:] = out_data[0]
        dx[np.arange(lab.shape[0]), lab] -= 1.0


class NDArraySquare(mx.operator.NDArrayOp):
    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] * in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * in_data[0] * out_grad[0]


class TwoOut(mx.operator.NumpyOp):
    def list_outputs(self):
        return ["double", "rowsum"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], [in_shape[0][0]]]

    def forward(self, in_data, out_data):
        out_data[0][:] = 2 * in_data[0]
        out_data[1][:] = in_data[0].sum(axis=1)

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * out_grad[0] + out_grad[1][:, None]


def test_warnings_as_mxnet():
    for cls, second in ((mx.operator.NumpyOp, "NumpyOp"), (mx.operator.NDArrayOp, "NDArrayOp")):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            cls()
        assert [(x.category, str(x.message)) for x in w] == [
            (UserWarning, "PythonOp has been deprecated. Please use CustomOp"),
            (UserWarning, f"{second} has been deprecated. Please use CustomOp")]
    with pytest.raises(NotImplementedError):
        mx.operator.PythonOp().get_symbol(mx.sym.Variable("x"))


def test_default_op_through_bind():
    # MXNet's test_python_op: the defaults copy forward and give ones backward
    x = mx.sym.Variable("X")
    s = mx.operator.NumpyOp().get_symbol(x, name="numpy_op")
    assert s.name == "numpy_op" and s.list_outputs() == ["numpy_op_output"]
    assert s.list_attr()["need_top_grad"] == "True"
    dx = nd.zeros(4)
    ex = s.bind(mx.cpu(), args=[nd.array([1, 2, 3, 4])], args_grad={"X": dx})
    ex.forward(is_train=True)
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [1, 2, 3, 4])
    ex.backward(nd.ones(4) * 3)
    np.testing.assert_array_equal(dx.asnumpy(), np.ones(4))
    assert '"op": "_Native"' in s.tojson().replace("'", '"')


def test_numpy_softmax_simple_bind_and_gradient():
    rng = np.random.default_rng(0)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data=data, num_hidden=4, name="fc")
    op = NumpySoftmax()
    sm = op(data=fc, name="softmax")
    assert sm.list_arguments() == ["data", "fc_weight", "fc_bias", "softmax_label"]
    # the label's shape follows from the data's through the op's infer_shape
    arg_s, out_s, _ = sm.infer_shape(data=(3, 5))
    assert arg_s[-1] == (3,) and out_s == [(3, 4)]
    ex = sm.simple_bind(mx.cpu(), data=(3, 5))
    x = rng.standard_normal((3, 5)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    lab = np.array([0, 2, 3], np.float32)
    for k, v in (("data", x), ("fc_weight", w), ("fc_bias", np.zeros(4)), ("softmax_label", lab)):
        ex.arg_dict[k][:] = v
    ex.forward(is_train=True)
    y = _np_softmax(x @ w.T)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), y, rtol=1e-5, atol=1e-6)
    ex.backward(nd.ones((3, 4)) * 5)       # a loss layer ignores the head gradient
    assert op.seen_out_grad == []
    dz = y - np.eye(4)[lab.astype(int)]
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), dz.T @ x, rtol=1e-4,
                               atol=1e-5)


def test_ndarray_op_gradient_matches_finite_differences():
    x = mx.sym.Variable("x")
    s = NDArraySquare()(x, name="sq")
    assert s.list_outputs() == ["sq_output"] and '"_NDArray"' in s.tojson()
    xv = np.array([0.5, -1.5, 2.0], np.float32)
    g = nd.zeros(3)
    ex = s.bind(mx.cpu(), args={"x": nd.array(xv)}, args_grad={"x": g})
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), xv ** 2)
    head = np.array([1.0, 2.0, -1.0], np.float32)
    ex.backward(nd.array(head))
    eps = 1e-3
    fd = ((xv + eps) ** 2 - (xv - eps) ** 2) / (2 * eps) * head
    np.testing.assert_allclose(g.asnumpy(), fd, rtol=1e-3)


def test_multiple_outputs_and_grad_req_add():
    x = mx.sym.Variable("x")
    s = TwoOut()(x, name="two")
    assert s.list_outputs() == ["two_double", "two_rowsum"]
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = nd.ones((2, 3))
    ex = s.bind(mx.cpu(), args={"x": nd.array(xv)}, args_grad={"x": g}, grad_req="add")
    ex.forward(is_train=True)
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), 2 * xv)
    np.testing.assert_array_equal(ex.outputs[1].asnumpy(), xv.sum(axis=1))
    ex.backward([nd.ones((2, 3)), nd.array([1, 10])])
    np.testing.assert_array_equal(g.asnumpy(), 1 + 2 + np.array([[1.0] * 3, [10.0] * 3]))


def test_inputs_are_copies_and_outputs_come_back():
    class Scribble(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            in_data[0][:] = 7           # a NumpyOp's inputs are copies: nothing changes
            out_data[0][:] = in_data[0] + 1

    xa = nd.ones(3)
    ex = Scribble().get_symbol(mx.sym.Variable("x")).bind(mx.cpu(), args=[xa])
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [8, 8, 8])
    np.testing.assert_array_equal(xa.asnumpy(), [1, 1, 1])


def test_outputs_on_a_gpu_are_copied_back(standin_gpu):
    x = mx.sym.Variable("x")
    s = TwoOut()(x)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = nd.zeros((2, 3), ctx=mx.gpu(0))
    ex = s.bind(mx.gpu(0), args={"x": nd.array(xv, ctx=mx.gpu(0))}, args_grad={"x": g})
    ex.forward(is_train=True)
    assert ex.outputs[0].context == mx.gpu(0)
    np.testing.assert_array_equal(ex.outputs[1].asnumpy(), xv.sum(axis=1))
    ex.backward([nd.ones((2, 3), ctx=mx.gpu(0)), nd.array([1, 10], ctx=mx.gpu(0))])
    np.testing.assert_array_equal(g.asnumpy(), 2 + np.array([[1.0] * 3, [10.0] * 3]))


def test_module_trains_through_a_numpy_op():
    rng = np.random.default_rng(1)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data=data, num_hidden=3, name="fc")
    net = NumpySoftmax()(data=fc, name="softmax")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"],
                        context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    lab = np.array([0, 1, 2, 1], np.float32)
    batch = mx.io.DataBatch([nd.array(rng.standard_normal((4, 5)))], [nd.array(lab)])

    def loss():
        mod.forward(batch, is_train=False)
        p = mod.get_outputs()[0].asnumpy()
        return -np.log(p[np.arange(4), lab.astype(int)]).sum()

    before = loss()
    for _ in range(5):
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    assert loss() < before


def test_imperative_internal_op_records_for_autograd():
    # MXNet allows nd._internal._NDArray(x, info=...) with the info of a symbol's node
    s = NDArraySquare()(mx.sym.Variable("x"))
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = nd._internal._NDArray(x, info=s.list_attr()["info"])
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), [1, 4, 9])
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 4, 6])


def test_bad_input_errors():
    x = mx.sym.Variable("x")
    s = mx.operator.NumpyOp().get_symbol(x)
    with pytest.raises(GpundaError, match="argument 'data' has dtype float64.*float32 only"):
        s.bind(mx.cpu(), args=[nd.ones(2, dtype="float64")]).forward()
    with pytest.raises(GpundaError, match="unknown parameter foo"):
        mx.operator.NumpyOp().get_symbol(x, foo=1)

    class Boom(mx.operator.NDArrayOp):
        def forward(self, in_data, out_data):
            raise RuntimeError("boom")

    with pytest.raises(GpundaError, match=r"Boom \(NDArrayOp\).forward raised RuntimeError: boom"):
        Boom().get_symbol(x).bind(mx.cpu(), args=[nd.ones(2)]).forward()

    class BadShape(mx.operator.NumpyOp):
        def infer_shape(self, in_shape):
            return [in_shape[0]]

    with pytest.raises(GpundaError, match="infer_shape must return"):
        BadShape().get_symbol(x).bind(mx.cpu(), args=[nd.ones(2)]).forward()
    with pytest.raises(GpundaError, match="names no NumpyOp or NDArrayOp"):
        nd._internal._Native(nd.ones(2), info="not-a-token")
