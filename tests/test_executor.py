"""Executor (bind/simple_bind) as MXNet 1.9.1's: persistent outputs, backward after an
inference forward, reshape sharing memory, CSE, debug_str (gpunda/symbol/executor.py,
optimize.py, debug.py)."""
import re

import numpy as np
import pytest

import gpunda as mx
from gpunda import sym
from gpunda.base import GpundaError


def test_backward_after_inference_forward(rng):
    a, b = sym.var("a"), sym.var("b")
    x = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    ga, gb = mx.nd.zeros((3, 4)), mx.nd.zeros((3, 4))
    ex = (a / b).bind(mx.cpu(), args=[mx.nd.array(x), mx.nd.array(y)], args_grad=[ga, gb])
    ex.forward()                          # is_train=False, as MXNet's test_bind does
    g = rng.standard_normal((3, 4)).astype(np.float32)
    ex.backward([mx.nd.array(g)])
    np.testing.assert_allclose(ga.asnumpy(), g / y, rtol=1e-5)
    np.testing.assert_allclose(gb.asnumpy(), -x * g / y ** 2, rtol=1e-5)


def test_outputs_exist_at_bind_and_are_written_in_place():
    s = sym.FullyConnected(sym.var("x"), num_hidden=4, name="fc")
    exe = s.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    held = exe.outputs[0]
    assert held.shape == (5, 4)
    exe.arg_dict["x"][:] = 1
    exe.arg_dict["fc_weight"][:] = 1
    exe.forward()
    assert held is exe.outputs[0] and np.all(held.asnumpy() == 4)
    small = exe.reshape(x=(3, 4))
    small.forward()
    # the smaller executor's output is a view on the start of the bigger one's
    assert np.all(exe.outputs[0].asnumpy()[:3] == 4)


def test_a_scalar_output_of_a_np_op_is_allocated_in_legacy_shape_mode():
    # MXNet 1.9.1, legacy shapes: simple_bind of sym.np.sum(x * 2) with x=(2, 3) ones gives
    # an NDArray of shape () holding 12.0; backward with a () head gradient of 3 gives 6s
    x = sym.var("x")
    ex = sym.np.sum(x.as_np_ndarray() * 2).simple_bind(mx.cpu(), x=(2, 3))
    assert ex.outputs[0].shape == ()
    ex.arg_dict["x"][:] = 1
    out = ex.forward(is_train=True)[0]
    assert type(out) is mx.nd.NDArray and out.shape == () and out.asnumpy() == 12.0
    with mx.np_shape(True):
        head = mx.nd.full((), 3.0)
    ex.backward([head])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), np.full((2, 3), 6.0))
    # a () the user asks for still reads as unknown outside np_shape, as in MXNet
    with pytest.raises(GpundaError, match="unknown outside mx.np_shape"):
        mx.nd.zeros(())


def test_common_subexpressions_are_merged_unless_disabled(monkeypatch):
    a, b = sym.var("a"), sym.var("b")
    arrs = {"a": mx.nd.array([1.0, 2.0]), "b": mx.nd.array([3.0, 5.0])}
    s = (a + b) + (a + b)
    ex = s.bind(mx.cpu(), args=arrs)
    assert len(ex.get_optimized_symbol().get_internals()) == len(s.get_internals()) - 1
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), [8.0, 14.0])
    # two outputs left on one entry get a copy, so they stay two arrays
    g = sym.Group([a * b, a * b])
    ex = g.bind(mx.cpu(), args=arrs)
    assert len(ex.get_optimized_symbol().get_internals()) == len(g.get_internals())
    o1, o2 = ex.forward()
    assert o1 is not o2 and np.allclose(o1.asnumpy(), [3.0, 10.0])
    drop = sym.Dropout(a) + sym.Dropout(a)      # random draws are never merged
    ex = drop.bind(mx.cpu(), args={"a": arrs["a"]})
    assert len(ex.get_optimized_symbol().get_internals()) == len(drop.get_internals())
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    assert s.bind(mx.cpu(), args=arrs).get_optimized_symbol() is s


def test_debug_str_memory_follows_the_gradient_plan():
    x = sym.var("data")
    for _ in range(10):
        x = x * x
    mb = lambda e: int(re.search(r"Total (\d+) MB allocated", e.debug_str()).group(1))  # noqa
    shape = (10, 3, 256, 256)       # 7.5 MB per float32 array
    train = mb(x.simple_bind(mx.cpu(), data=shape))
    infer = mb(x.simple_bind(mx.cpu(), data=shape, grad_req="null"))
    stopped = mb(sym.stop_gradient(x).simple_bind(mx.cpu(), data=shape))
    # inference reuses two buffers; training keeps the 10 products for backward
    assert infer == stopped == 15 and train >= 75
    text = x.simple_bind(mx.cpu(), data=(2,)).debug_str()
    assert "Op:elemwise_mul, Name=_mul" in text and "Variable:data" in text


def test_forward_keyword_checks_shape():
    a = sym.var("a")
    ex = (a * 2).bind(mx.cpu(), args={"a": mx.nd.ones((2,))})
    np.testing.assert_allclose(ex.forward(a=mx.nd.array([1.0, 3.0]))[0].asnumpy(), [2.0, 6.0])
    with pytest.raises(ValueError, match="shape"):
        ex.forward(a=mx.nd.ones((3,)))
    with pytest.raises(TypeError, match="unknown argument"):
        ex.forward(zz=mx.nd.ones((2,)))


def test_bound_outputs_have_the_computed_dtype():
    # shape_array's output is int64 whatever its input: the held array must be too, so
    # the one handed out at bind is the one forward fills
    exe = sym.shape_array(sym.var("x")).simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    held = exe.outputs[0]
    assert held.dtype == np.int64
    exe.forward()
    assert exe.outputs[0] is held and held.asnumpy().tolist() == [2, 3]


def test_ops_with_param_dependent_output_counts_run_in_a_graph(rng):
    # SliceChannel(num_outputs=1) and LeakyReLU return one-element sequences
    x = rng.standard_normal((2, 3)).astype(np.float32)
    s = sym.LeakyReLU(sym.SliceChannel(sym.var("x"), num_outputs=1, axis=1), act_type="elu",
                      slope=0.5)
    out = s.eval(x=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-6)


def test_monitor_callback_sees_every_input_and_output_in_graph_order():
    data = sym.var("data", shape=(2, 3, 4, 4))
    conv = sym.Convolution(data, kernel=(2, 2), num_filter=1, name="conv")
    exe = conv.simple_bind(mx.cpu(), grad_req="null")
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name.decode(), arr.shape)),
                            monitor_all=True)
    exe.forward()
    # MXNet 1.9.1's order: a variable, then the op's name for it, ..., then the output
    assert [n for n, _ in seen] == ["data", "conv_data", "conv_weight", "conv_weight",
                                    "conv_bias", "conv_bias", "conv_output"]
    assert seen[-1][1] == (2, 1, 3, 3)
    seen.clear()
    exe.set_monitor_callback(lambda name, arr: seen.append(name.decode()))
    exe.forward()
    assert seen == ["conv_output"]


def test_reshaped_executor_keeps_the_monitor_callback():
    data = sym.var("data")
    conv = sym.Convolution(data, kernel=(1, 1), num_filter=1, name="conv")
    exe = conv.simple_bind(mx.cpu(), grad_req="null", data=(1, 3, 4, 4))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    wider = exe.reshape(allow_up_sizing=True, data=(1, 3, 4, 6))
    wider.forward()
    assert seen == [(b"conv_output", (1, 1, 4, 6))]


def test_monitor_arrays_rewrap_through_an_ndarray_handle_as_in_mxnet():
    import ctypes
    from gpunda.base import NDArrayHandle
    from gpunda.ndarray import NDArray
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
    exe = sym.relu(sym.var("x"), name="r").bind(mx.cpu(), {"x": mx.nd.array(x)})
    mins = {}

    def callback(name, arr):        # MXNet's monitor idiom (test_operator, mx.monitor)
        arr = NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)
        mins[name.decode()] = mx.nd.min(arr).asscalar()
    exe.set_monitor_callback(callback, monitor_all=True)
    exe.forward()
    assert mins == {"x": -2.0, "r_input0": -2.0, "r_output": 0.0}


def test_simple_bind_reads_only_tuples_as_shapes():
    s = sym.take(sym.var("a"), sym.var("indices"), axis=0)
    exe = s.simple_bind(mx.cpu(), a=(4, 3), indices=(2,), axis=0, mode="clip")
    assert exe.outputs[0].shape == (2, 3)


def test_bound_arrays_decide_dtypes_and_extra_head_grads_are_ignored():
    x = sym.var("x", dtype=np.float64)       # a hint; the bound float32 array wins
    gx = mx.nd.zeros((2,))
    ex = (x * 3).bind(mx.cpu(), args={"x": mx.nd.array([1.0, 2.0])}, args_grad={"x": gx})
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), [3.0, 6.0])
    assert ex.outputs[0].dtype == np.float32
    ex.backward([mx.nd.ones((2,)), mx.nd.ones((5,))])      # one output: the second is unused
    np.testing.assert_allclose(gx.asnumpy(), [3.0, 3.0])


def test_bind_for_gradients_through_an_op_without_a_gradient_rule_raises():
    # MXNet's bind builds the gradient graph and fails on an op without FGradient;
    # stop_gradient in between, or grad_req='null' for its inputs, makes it bindable
    x, idx = mx.sym.var("x"), mx.sym.var("idx")
    y = mx.sym.batch_take(x, idx)
    kw = dict(ctx=mx.cpu(), x=(4, 3), idx=(4,), type_dict={"x": "float32", "idx": "int32"})
    with pytest.raises(GpundaError, match="batch_take is non-differentiable"):
        y.simple_bind(**kw)
    exe = mx.sym.stop_gradient(y).simple_bind(**kw)
    exe.forward(is_train=True)
    exe.backward()
    assert np.all(exe.grad_dict["x"].asnumpy() == 0)
    y.simple_bind(grad_req={"x": "null", "idx": "null"}, **kw).forward()
    (y + mx.sym.var("w")).simple_bind(grad_req={"w": "write"}, w=(4,), **kw)


def test_deferred_op_error_reaches_executor_output_at_first_read():
    # MXNet: forward returns; the kernel's error is raised when the output is read
    s = mx.sym.take(mx.sym.Variable("a"), mx.sym.Variable("i"), mode="raise")
    ex = s.simple_bind(mx.cpu(), a=(2, 3), i=(2,))
    ex.arg_dict["a"][:] = mx.nd.array(np.arange(6.0).reshape(2, 3))
    ex.arg_dict["i"][:] = mx.nd.array([0, 5])
    ex.forward(is_train=True)
    with pytest.raises(mx.base.MXNetError, match="index 5 is out of range"):
        ex.outputs[0].asnumpy()
    ex.arg_dict["i"][:] = mx.nd.array([1, 0])
    ex.forward(is_train=False)
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [[3, 4, 5], [0, 1, 2]])


def test_monitor_all_names_inputs_as_mxnet_does():
    # MXNet 1.9.1 names a single input "input0" unless the op lists its input names
    data = mx.sym.Variable("data", shape=(2, 3, 4, 4))
    for s, want in [(mx.sym.Activation(data, act_type="relu", name="act"),
                     ["data", "act_input0", "act_output"]),
                    (mx.sym.Pooling(data, kernel=(2, 2), name="pool"),
                     ["data", "pool_data", "pool_output"]),
                    (mx.sym.concat(data, data, dim=0, name="cc"),
                     ["data", "cc_arg0", "data", "cc_arg1", "cc_output"])]:
        names = []
        ex = s.simple_bind(mx.cpu(), grad_req="null")
        ex.set_monitor_callback(lambda n, a: names.append(n.decode()), monitor_all=True)
        ex.forward()
        assert names == want


def test_backward_through_a_small_graph_of_a_zero_gradient_op():
    # a CachedOp inlines graphs of <= inline_limit ops under autograd; an Executor must
    # not, or backward finds its output unrecorded (MXNet gives zero gradients)
    x = mx.sym.var("x")
    exe = mx.sym.argmax(x, axis=1).bind(mx.cpu(), {"x": mx.nd.array([[1.0, 3.0], [4.0, 2.0]])},
                                       args_grad={"x": mx.nd.ones((2, 2))})
    out = exe.forward(is_train=True)[0]
    assert out.asnumpy().tolist() == [1.0, 0.0]
    exe.backward([mx.nd.ones((2,))])
    assert exe.grad_dict["x"].asnumpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_repeated_training_steps_follow_new_values_and_new_gradient_buffers(rng):
    # the executor marks its gradient handles once and reuses them: every step must
    # still see the arguments' current values, and a new gradient buffer or grad_req
    # must take effect at once
    w, x = sym.var("w"), sym.var("x")
    exe = (w * x).sum().simple_bind(mx.cpu(), w=(3, 4), x=(3, 4), grad_req="write")
    for _ in range(3):
        xv = rng.standard_normal((3, 4)).astype(np.float32)
        exe.arg_dict["x"][:] = xv
        exe.arg_dict["w"][:] = rng.standard_normal((3, 4)).astype(np.float32)
        exe.forward(is_train=True)
        exe.backward()
        np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), xv, rtol=1e-6)
    fresh = mx.nd.zeros((3, 4), ctx=mx.cpu())
    old = exe.grad_dict["w"]
    exe.grad_dict["w"] = fresh
    exe._grad_req["w"] = "add"
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward()
    np.testing.assert_allclose(fresh.asnumpy(), 2 * xv, rtol=1e-6)
    np.testing.assert_allclose(old.asnumpy(), xv, rtol=1e-6)     # no longer written


def test_simple_bind_group2ctx_places_inputs_as_mxnet():
    """simple_bind(group2ctx=...) makes each input's arrays (and gradients, aux states) on
    its ctx_group's context, as MXNet 1.9.1 (contexts and numbers recorded with
    /work/mxref); the results do not change."""
    import gpunda as mx
    with mx.AttrScope(ctx_group="stage1"):
        data = mx.sym.Variable("data")
        fc1 = mx.sym.FullyConnected(data, name="fc1", num_hidden=4)
    with mx.AttrScope(ctx_group="stage2"):
        out = mx.sym.SoftmaxOutput(mx.sym.BatchNorm(mx.sym.FullyConnected(
            fc1, num_hidden=4, name="fc2")), name="softmax")
    e = out.simple_bind(mx.cpu(0), group2ctx={"stage1": mx.cpu(1), "stage2": mx.cpu(2)},
                        data=(2, 3))
    assert [str(a.context) for a in e.arg_arrays] == ["cpu(1)"] * 3 + ["cpu(2)"] * 5
    assert [str(a.context) for a in e.grad_arrays] == ["cpu(1)"] * 3 + ["cpu(2)"] * 5
    assert [str(a.context) for a in e.aux_arrays] == ["cpu(2)"] * 2
    rng = np.random.RandomState(0)
    for a in e.arg_arrays:
        a[:] = rng.uniform(-1, 1, a.shape).astype("f")
    e.arg_dict["softmax_label"][:] = np.array([1, 3], "f")
    e.forward(is_train=True)
    e.backward()
    np.testing.assert_allclose(e.outputs[0].asnumpy(),
                               [[0.105, 0.60863, 0.14199, 0.14437],
                                [0.2783, 0.03466, 0.31328, 0.37376]], atol=2e-5)
    np.testing.assert_allclose(e.grad_dict["fc1_weight"].asnumpy(),
                               [[0.00193, 0.14342, -0.02122], [-0.00317, -0.23522, 0.0348],
                                [0.00027, 0.0202, -0.00299], [0.00038, 0.02847, -0.00421]],
                               atol=2e-5)


def test_monitor_callback_wrapper_drops_the_third_argument():
    # MXNet 1.9.1: the wrapper calls callback(name, array) and ignores the user pointer
    from gpunda import executor
    seen = []
    handle = executor._monitor_callback_wrapper(lambda n, arr: seen.append((n, arr)))
    assert handle(b"fc_output", 7, None) is None
    assert seen == [(b"fc_output", 7)]
