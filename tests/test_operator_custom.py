"""mx.operator: custom operators in Python (CustomOp / CustomOpProp / register, nd.Custom, sym.Custom).

References: NumPy for values, hand derivatives for gradients; MXNet's conventions for
the prop's defaults (outputs shaped and typed like the first argument, kwargs as strings).
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, nd
from gpunda.base import GpundaError


class _Mult(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], in_data[1] * out_grad[0])
        self.assign(in_grad[1], req[1], in_data[0] * out_grad[0])


@mx.operator.register("test_mult")
class _MultProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["lhs", "rhs"]

    def create_operator(self, ctx, shapes, dtypes):
        return _Mult()


class _Scale(mx.operator.CustomOp):
    """out = x * factor; remembers in forward what backward uses (the op's state)."""

    def __init__(self, factor):
        super().__init__()
        self.factor = factor
        self.seen_train = None

    def forward(self, is_train, req, in_data, out_data, aux):
        self.seen_train = is_train
        self.saved = in_data[0].asnumpy().copy()
        aux[0][:] = aux[0] + 1          # a running counter, as BatchNorm's moving stats
        self.assign(out_data[0], req[0], in_data[0] * self.factor)
        self.assign(out_data[1], req[1], in_data[0].sum(axis=1))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert self.saved is not None   # the forward's instance
        g = out_grad[0] * self.factor + out_grad[1].reshape((-1, 1))
        self.assign(in_grad[0], req[0], g)


@mx.operator.register("test_scale")
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self, factor="1.0"):
        super().__init__(need_top_grad=True)
        self.factor = float(factor)     # kwargs arrive as strings, as in MXNet

    def list_outputs(self):
        return ["scaled", "rowsum"]

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], [in_shape[0][0]]], [in_shape[0]]

    def create_operator(self, ctx, shapes, dtypes):
        assert ctx == mx.current_context()      # where the tests' inputs are
        assert [list(s) for s in shapes] == [list(shapes[0])]
        return _Scale(self.factor)


class _Ones(mx.operator.CustomOp):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], np.ones((self.n, 2), dtype=np.float32))


@mx.operator.register("test_ones")
class _OnesProp(mx.operator.CustomOpProp):
    def __init__(self, n):
        super().__init__()
        self.n = int(n)

    def list_arguments(self):
        return []

    def infer_shape(self, in_shape):
        return [], [(self.n, 2)], []

    def infer_type(self, in_type):
        return [], [np.float32], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Ones(self.n)


def test_nd_custom_forward_and_gradient(rng):
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))
    x, y = nd.array(a), nd.array(b)
    x.attach_grad()
    y.attach_grad()
    head = rng.uniform(-1, 1, (3, 4))
    with autograd.record():
        out = nd.Custom(x, y, op_type="test_mult", name="m")
    out.backward(nd.array(head))
    np.testing.assert_allclose(out.asnumpy(), (a * b).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), (b * head).astype(np.float32), rtol=1e-5)
    np.testing.assert_allclose(y.grad.asnumpy(), (a * head).astype(np.float32), rtol=1e-5)


def test_kwargs_outputs_aux_and_state(rng):
    a = rng.uniform(-1, 1, (2, 3))
    x, count = nd.array(a), nd.zeros((2, 3))
    x.attach_grad()
    with autograd.record():
        scaled, rowsum = nd.Custom(x, count, op_type="test_scale", factor=2.5)
        loss = (scaled * 3).sum() + rowsum.sum()
    loss.backward()
    np.testing.assert_allclose(scaled.asnumpy(), (a * 2.5).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(rowsum.asnumpy(), a.sum(axis=1).astype(np.float32), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((2, 3), 3 * 2.5 + 1), rtol=1e-6)
    np.testing.assert_array_equal(count.asnumpy(), np.ones((2, 3)))     # aux updated in place


def test_symbol_custom_names_shapes_json_and_executor(rng):
    s = mx.sym.Custom(mx.sym.var("x"), mx.sym.var("c"), op_type="test_scale", factor="4",
                      name="sc")
    assert s.list_arguments() == ["x"]
    assert s.list_auxiliary_states() == ["c"]
    assert s.list_outputs() == ["sc_scaled", "sc_rowsum"]
    arg, out, aux = s.infer_shape(x=(5, 2))
    assert (arg, out, aux) == ([(5, 2)], [(5, 2), (5,)], [(5, 2)])
    again = mx.sym.load_json(s.tojson())
    assert again.infer_shape(x=(5, 2))[1] == [(5, 2), (5,)]
    a = rng.uniform(-1, 1, (5, 2))
    ex = again.bind(mx.current_context(), args={"x": nd.array(a)},
                    args_grad={"x": nd.zeros((5, 2))}, aux_states={"c": nd.zeros((5, 2))})
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), (4 * a).astype(np.float32), rtol=1e-6)
    ex.backward([nd.ones((5, 2)), nd.ones((5,))])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.full((5, 2), 5.0))


def test_custom_without_inputs():
    with autograd.record():
        x = nd.Custom(n=3, op_type="test_ones")
    np.testing.assert_array_equal(x.asnumpy(), np.ones((3, 2), np.float32))
    assert x.dtype == np.float32


def test_hybridized_block_with_custom(rng):
    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.Custom(x, x, op_type="test_mult")

    net = Net()
    net.hybridize()
    a = rng.uniform(-1, 1, (2, 2))
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), (a * a).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), (2 * a).astype(np.float32), rtol=1e-5)


def test_second_order_raises(rng):
    x = nd.array(rng.uniform(-1, 1, (2, 2)))
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, x, op_type="test_mult")
        g = autograd.grad(y, [x], create_graph=True)
        g = g[0] if isinstance(g, list) else g
    with pytest.raises(GpundaError, match="once-differentiable"):
        g.backward()


def test_errors_name_the_op():
    x = nd.ones((2, 2))
    with pytest.raises(GpundaError, match="op_type='nope' is not registered"):
        nd.Custom(x, op_type="nope")
    with pytest.raises(GpundaError, match="expects 2 inputs"):
        nd.Custom(x, op_type="test_mult")

    class Boom(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("bad value")

    @mx.operator.register("test_boom")
    class BoomProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Boom()

    before = x.asnumpy().copy()
    with pytest.raises(GpundaError, match=r"'test_boom'.forward raised ValueError: bad value"):
        nd.Custom(x, op_type="test_boom")
    np.testing.assert_array_equal(x.asnumpy(), before)
    with pytest.raises(GpundaError, match="not a CustomOpProp"):
        mx.operator.register("x")(object)
    with pytest.raises(GpundaError, match="only dense inputs"):
        nd.Custom(x.tostype("csr"), op_type="test_boom")


def test_registry_queries():
    assert "test_mult" in mx.operator.get_all_registered_operators()
    assert "FullyConnected" in mx.operator.get_all_registered_operators()
    args = mx.operator.get_operator_arguments("LeakyReLU")
    assert args.narg == len(args.names) and "act_type" in args.names


def test_make_loss_gradients(rng):
    a = rng.uniform(-1, 1, (4, 3))
    for kw, expect in [({}, np.ones((4, 3))),
                       ({"grad_scale": 2.0, "normalization": "batch"}, np.full((4, 3), 0.5)),
                       ({"normalization": "valid", "valid_thresh": 0.0},
                        np.full((4, 3), 1.0 / max((a > 0).sum(), 1)))]:
        x = nd.array(a)
        x.attach_grad()
        with autograd.record():
            y = nd.MakeLoss(x, **kw)
        y.backward(nd.array(rng.uniform(-5, 5, (4, 3))))       # the head gradient is ignored
        np.testing.assert_allclose(y.asnumpy(), a.astype(np.float32), rtol=1e-6)
        np.testing.assert_allclose(x.grad.asnumpy(), expect, rtol=1e-6)
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = nd.make_loss(x * 2)
    y.backward(nd.array(rng.uniform(-5, 5, (4, 3))))
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((4, 3), 2.0))


def test_operator_arguments_list_inputs_then_params_with_dmlc_types():
    # as MXNet 1.9.1's get_operator_arguments('Activation')
    args = mx.operator.get_operator_arguments("Activation")
    assert args.names == ["data", "act_type"] and args.narg == 2
    assert args.types == ["NDArray-or-Symbol",
                          "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]


def test_infer_shape_is_asked_with_partial_shapes():
    # MXNet asks the prop with unknown shapes as []: the label follows from the data
    @mx.operator.register("test_label_from_data")
    class LabelProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data", "label"]

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]]

    s = mx.sym.Custom(data=mx.sym.Variable("data"), op_type="test_label_from_data", name="sm")
    arg_s, out_s, _ = s.infer_shape(data=(3, 4))
    assert arg_s == [(3, 4), (3,)] and out_s == [(3, 4)]
    # nothing known: nothing inferred (the prop is not asked to guess)
    assert s.infer_shape_partial()[0] == [(), ()]
