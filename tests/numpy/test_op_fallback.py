"""mx.numpy_op_fallback: MXNet 1.9.1's NumPy-fallback custom ops and ``register``; values and
graph nodes recorded from MXNet 1.9.1 (/work/mxref)."""
import json

import numpy as np
import pytest

import gpunda as mx
import gpunda.numpy_op_fallback as fb
from gpunda.numpy import _internal as npi


def test_resize_and_unravel_index_match_mxnet():
    x = mx.np.array([[1., 2, 3], [4, 5, 6]])
    r = npi.resize_fallback(x, new_shape=(3, 3))
    assert isinstance(r, mx.np.ndarray)
    np.testing.assert_array_equal(r.asnumpy(), [[1, 2, 3], [4, 5, 6], [1, 2, 3]])
    r = npi.resize_fallback(mx.np.array([1, 2, 3], dtype="int32"), new_shape=5)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), [1, 2, 3, 1, 2])
    u = npi.unravel_index_fallback(mx.np.array([5, 7], dtype="int64"), shape=(2, 4))
    np.testing.assert_array_equal(u.asnumpy(), [[1, 1], [1, 3]])


def test_empty_like_passes_none_keywords_as_mxnet_does():
    # MXNet hands a Custom op's keywords over as strings, None as 'None' (shape=None here)
    e = npi.empty_like_fallback(mx.np.ones((2, 3)), dtype="int32", order="C", subok=False,
                                shape=None)
    assert e.shape == (2, 3) and e.dtype == np.int32
    e = npi.empty_like_fallback(mx.np.ones((2, 3)), dtype=None, order="C", subok=False,
                                shape=None)
    assert e.shape == (2, 3) and e.dtype == np.float32


def test_the_custom_ops_themselves_run():
    # gpunda's native _npi_unravel_index_fallback / _npi_mvn_fallback keep those names; the
    # registered custom ops of the same type run through Custom
    u = mx.nd.Custom(mx.nd.array([5, 7], dtype="int64"), op_type="unravel_index_fallback",
                     shape=(2, 4))
    np.testing.assert_array_equal(u.asnumpy(), [[1, 1], [1, 3]])
    mx.random.seed(3)
    mean = mx.nd.array([1., -2.])
    cov = np.array([[2., 0.6], [0.6, 1.]], dtype=np.float32)
    draws = mx.nd.Custom(mean, mx.nd.array(cov), op_type="mvn_fallback", size=(20000,))
    assert draws.shape == (20000, 2)
    d = draws.asnumpy()
    np.testing.assert_allclose(d.mean(0), [1, -2], atol=0.05)
    # covariance cov, as NumPy's multivariate_normal (MXNet 1.9.1's draws have L^T L, a bug:
    # [[2.16, 0.39], [0.39, 0.82]] here; docs/compat.md)
    np.testing.assert_allclose(np.cov(d.T), cov, atol=0.08)
    with pytest.raises(ValueError, match="mean and cov must have the same length"):
        mx.nd.Custom(mx.nd.ones(3), mx.nd.array(cov), op_type="mvn_fallback")
    assert {"empty_like_fallback", "resize_fallback", "unravel_index_fallback",
            "mvn_fallback"} <= set(mx.operator.get_all_registered_operators())


def test_symbolic_fallback_is_mxnets_custom_node():
    s = mx.sym.numpy._internal.resize_fallback(mx.sym.var("a").as_np_ndarray(),
                                               new_shape=(3, 3))
    node = json.loads(s.tojson())["nodes"][-1]
    assert node["op"] == "Custom"       # MXNet 1.9.1's node, attributes as strings
    assert node["attrs"] == {"new_shape": "(3, 3)", "op_type": "resize_fallback"}
    assert s.infer_shape(a=(2, 3))[1] == [(3, 3)]
    out = s.eval(a=mx.nd.array([[1, 2, 3], [4, 5, 6]]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2, 3], [4, 5, 6], [1, 2, 3]])


def test_register_a_new_fallback_and_refuse_duplicates():
    @mx.util.use_np
    class Flip(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0],
                        mx.np.array(np.flip(in_data[0].asnumpy()), ctx=in_data[0].ctx))

    name = "h28c_flip_fallback"

    @fb.register(name)
    class FlipProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["a"]

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Flip()

    y = getattr(npi, name)(mx.np.array([1., 2, 3]))
    np.testing.assert_array_equal(y.asnumpy(), [3, 2, 1])
    s = getattr(mx.sym.numpy._internal, name)(mx.sym.var("a").as_np_ndarray())
    np.testing.assert_array_equal(s.eval(a=mx.nd.array([1, 2]))[0].asnumpy(), [2, 1])
    with pytest.raises(ValueError, match=f"duplicate name '{name}'") as e:
        fb.register(name)(FlipProp)
    assert isinstance(e.value, mx.MXNetError)
    with pytest.raises(ValueError, match="duplicate name 'resize_fallback'"):
        fb.register("resize_fallback")(fb.ResizeProp)


def test_no_gradient():
    x = mx.np.array([1., 2.])
    x.attach_grad()
    with mx.autograd.record():
        y = npi.resize_fallback(x, new_shape=(3,))
    with pytest.raises(mx.MXNetError, match="resize .*does not support gradient"):
        y.backward()
