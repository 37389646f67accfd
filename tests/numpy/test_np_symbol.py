"""np Symbols (MXNet's ``mx.sym.np._Symbol``): ``Symbol.as_np_ndarray()``, ``mx.sym.np`` /
``mx.sym.npx`` / ``np._internal`` graph builders, their results against NumPy, and np graph
JSON both ways with MXNet 1.9.1 (a graph MXNet wrote, embedded below)."""
import json

import numpy as onp
import pytest

import gpunda as mx
from gpunda import np, npx, autograd
from gpunda.gluon import HybridBlock
from gpunda.symbol.numpy import _Symbol


@pytest.fixture(autouse=True)
def _np_mode():
    npx.set_np()
    yield
    npx.reset_np()


_RNG = onp.random.RandomState(7)
A = _RNG.uniform(-1, 1, (3, 4)).astype(onp.float32)
B = _RNG.uniform(-1, 1, (4, 5)).astype(onp.float32)


def _run(sym, **values):
    """The outputs of ``sym`` bound to official-NumPy ``values``, as NumPy arrays."""
    ex = sym.bind(mx.cpu(), {k: mx.nd.array(v, dtype=v.dtype) for k, v in values.items()})
    return [o.asnumpy() for o in ex.forward()]


def _vars(*names):
    return [mx.sym.var(n).as_np_ndarray() for n in names]


def test_as_np_ndarray_is_the_same_graph_with_numpy_semantics():
    x = mx.sym.var("x")
    s = mx.sym.sum(x * 2)
    n = s.as_np_ndarray()
    assert type(n) is _Symbol and type(s) is mx.sym.Symbol     # a new object, s unchanged
    assert n.list_arguments() == s.list_arguments() and n.tojson() == s.tojson()
    assert type(n.as_nd_ndarray()) is mx.sym.Symbol and n.as_np_ndarray() is n
    assert s.as_nd_ndarray() is s


@pytest.mark.parametrize("build, ref", [
    (lambda a, b: mx.sym.np.dot(a, b), lambda a, b: a @ b),
    (lambda a, b: mx.sym.np.tensordot(a, b, 1), lambda a, b: onp.tensordot(a, b, 1)),
    (lambda a, b: mx.sym.np.tensordot(a, a, [[0, 1], [0, 1]]),
     lambda a, b: onp.tensordot(a, a, [[0, 1], [0, 1]])),
    (lambda a, b: mx.sym.np.inner(a, a), lambda a, b: onp.inner(a, a)),
    (lambda a, b: mx.sym.np.outer(a, b), lambda a, b: onp.outer(a, b)),
    (lambda a, b: mx.sym.np.vdot(a, a), lambda a, b: onp.vdot(a, a)),
    (lambda a, b: mx.sym.np.sum(a, axis=1, keepdims=True), lambda a, b: a.sum(1, keepdims=True)),
    (lambda a, b: mx.sym.np.mean(a, axis=0), lambda a, b: a.mean(0)),
    (lambda a, b: mx.sym.np.prod(a, axis=1), lambda a, b: a.prod(1)),
    (lambda a, b: mx.sym.np.roll(a, shift=(1, -2), axis=(0, 1)),
     lambda a, b: onp.roll(a, (1, -2), (0, 1))),
    (lambda a, b: mx.sym.np.stack([a, a * 2], axis=1), lambda a, b: onp.stack([a, a * 2], 1)),
    (lambda a, b: mx.sym.np.linalg.det(mx.sym.np.dot(a, a.T)),
     lambda a, b: onp.linalg.det((a @ a.T).astype(onp.float64))),
    (lambda a, b: 1 - a * 2 + a / 4 - a ** 2, lambda a, b: 1 - a * 2 + a / 4 - a ** 2),
    (lambda a, b: a.flatten(), lambda a, b: a.flatten()),
    (lambda a, b: a.T[1:3], lambda a, b: a.T[1:3]),
    (lambda a, b: a[1, ::2], lambda a, b: a[1, ::2]),
    (lambda a, b: mx.sym.np.arange(4) + a, lambda a, b: onp.arange(4) + a),
    (lambda a, b: mx.sym.np.full((2, 3, 4), a), lambda a, b: onp.full((2, 3, 4), a)),
])
def test_sym_np_graphs_compute_what_numpy_computes(build, ref):
    a, b = _vars("a", "b")
    out = build(a, b)
    assert isinstance(out, _Symbol)
    got, = _run(out.as_nd_ndarray(), a=A, b=B)
    want = ref(A.astype(onp.float64), B.astype(onp.float64))
    assert got.shape == onp.shape(want)
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_sym_np_sum_and_mean_dtypes_as_numpy():
    x, = _vars("x")
    ints = onp.array([[100, 120, 7], [-128, 90, 60]], dtype=onp.int8)
    s8, m8, mf = _run(mx.sym.Group([mx.sym.np.sum(x, axis=0, dtype="int32"),
                                    mx.sym.np.mean(x, axis=1, dtype="int8"),
                                    mx.sym.np.mean(x, axis=None, dtype="float32")]), x=ints)
    onp.testing.assert_array_equal(s8, ints.sum(0, dtype=onp.int32))
    # NumPy accumulates an int8 mean in int8 (wrapping) and truncates the quotient
    onp.testing.assert_array_equal(m8, onp.mean(ints, axis=1, dtype=onp.int8))
    assert m8.dtype == onp.int8 and mf.dtype == onp.float32
    onp.testing.assert_allclose(mf, ints.mean(), rtol=1e-6)


def test_sym_np_graph_gradients_through_the_executor():
    a, b = _vars("a", "b")
    out = mx.sym.np.tensordot(a, b, 1).as_nd_ndarray()
    args = {"a": mx.nd.array(A), "b": mx.nd.array(B)}
    grads = {"a": mx.nd.zeros(A.shape), "b": mx.nd.zeros(B.shape)}
    ex = out.bind(mx.cpu(), args, args_grad=grads)
    ex.forward(is_train=True)
    head = _RNG.uniform(size=(3, 5)).astype(onp.float32)
    ex.backward(mx.nd.array(head))
    onp.testing.assert_allclose(grads["a"].asnumpy(), head @ B.T, rtol=1e-5, atol=1e-6)
    onp.testing.assert_allclose(grads["b"].asnumpy(), A.T @ head, rtol=1e-5, atol=1e-6)


def test_np_symbol_operands_are_symbols_or_scalars():
    a, = _vars("a")
    with pytest.raises(TypeError):
        a + [1.0, 2.0]          # a graph holds no host data (MXNet: TypeError too)
    with pytest.raises(TypeError):
        a * np.ones((3, 4))


# written by MXNet 1.9.1: npx.set_np(); Group([np.tensordot(a, b, 1),
# np.mean(np.roll(a, 1, axis=1), axis=0), npx.constraint_check(a > -10, 'neg') * a,
# a.flatten()]).tojson()
_MXNET_JSON = (
    '{"nodes":[{"op":"null","name":"a","inputs":[]},{"op":"null","name":"b","inputs":[]},'
    '{"op":"_npi_tensordot_int_axes","name":"tensordot_int_axes0","attrs":{"axes":"1"},'
    '"inputs":[[0,0,0],[1,0,0]]},{"op":"_np_roll","name":"roll0","attrs":{"axis":"1",'
    '"shift":"1"},"inputs":[[0,0,0]]},{"op":"_npi_mean","name":"mean0","attrs":{"axis":"0",'
    '"keepdims":"False"},"inputs":[[3,0,0]]},{"op":"_npi_greater_scalar","name":'
    '"greater_scalar0","attrs":{"is_int":"True","scalar":"-10.0"},"inputs":[[0,0,0]]},'
    '{"op":"_npx_constraint_check","name":"constraint_check0","attrs":{"msg":"neg"},'
    '"inputs":[[5,0,0]]},{"op":"_npi_multiply","name":"multiply0","inputs":[[6,0,0],'
    '[0,0,0]]},{"op":"_np_reshape","name":"reshape0","attrs":{"newshape":"(-1,)",'
    '"order":"C"},"inputs":[[0,0,0]]}],"arg_nodes":[0,1],"node_row_ptr":[0,1,2,3,4,5,6,7,8,'
    '9],"heads":[[2,0,0],[4,0,0],[7,0,0],[8,0,0]],"attrs":{"is_np_shape":["int",1],'
    '"mxnet_version":["int",10901]}}')


def _mxnet_graph_reference(a, b):
    return [onp.tensordot(a, b, 1), onp.roll(a, 1, axis=1).mean(0), a, a.flatten()]


def test_an_np_graph_mxnet_wrote_loads_and_computes():
    s = mx.sym.load_json(_MXNET_JSON).as_np_ndarray()
    assert s.list_arguments() == ["a", "b"]
    for got, want in zip(_run(s, a=A, b=B), _mxnet_graph_reference(A, B)):
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="neg"):
        _run(s, a=A - 20, b=B)


def test_np_graph_json_round_trip_keeps_mxnet_op_names(tmp_path):
    a, b = _vars("a", "b")
    g = mx.sym.Group([mx.sym.np.tensordot(a, b, 1),
                      mx.sym.np.mean(mx.sym.np.roll(a, 1, axis=1), axis=0),
                      mx.sym.npx.constraint_check(a > -10, "neg") * a, a.flatten()])
    ops = [n["op"] for n in json.loads(g.tojson())["nodes"] if n["op"] != "null"]
    assert ops == [n["op"] for n in json.loads(_MXNET_JSON)["nodes"] if n["op"] != "null"]
    path = str(tmp_path / "np-symbol.json")
    g.save(path)
    back = mx.np_symbol.load(path)              # MXNet's np-mode SymbolBlock.imports reads so
    assert type(back) is _Symbol and type(mx.np_symbol.load_json(g.tojson())) is _Symbol
    for got, want in zip(_run(back, a=A, b=B), _mxnet_graph_reference(A, B)):
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _Full(HybridBlock):
    def hybrid_forward(self, F, a):
        return F.np.full((2, 3), a, dtype="int32") + F.np.arange(0, 3, None, dtype="int32")


@pytest.mark.parametrize("hybridize", [False, True])
def test_full_of_an_array_and_arange_without_step_in_blocks(hybridize):
    net = _Full()
    if hybridize:
        net.hybridize()
    out = net(np.array([1.5, 2.5, 3.5]))
    want = onp.full((2, 3), onp.array([1.5, 2.5, 3.5]), dtype=onp.int32) + onp.arange(3)
    assert out.dtype == onp.int32
    onp.testing.assert_array_equal(out.asnumpy(), want)


class _Check(HybridBlock):
    def hybrid_forward(self, F, x, ok):
        return x * F.npx.constraint_check(ok, "x must be positive")


@pytest.mark.parametrize("hybridize", [False, True])
def test_constraint_check_passes_values_or_raises_value_error(hybridize):
    net = _Check()
    if hybridize:
        net.hybridize()
    x = np.array(A)
    onp.testing.assert_array_equal(net(x, x > -2).asnumpy(), A)
    with pytest.raises(ValueError, match="x must be positive"):
        net(x, x > 0).asnumpy()


def test_constraint_check_gives_a_0d_true_and_wants_booleans():
    r = npx.constraint_check(np.ones((2, 3), dtype=bool))
    assert r.shape == () and r.dtype == onp.bool_ and bool(r)
    with pytest.raises(ValueError, match="Constraint violated."):
        npx.constraint_check(np.zeros((2,), dtype=bool))
    with pytest.raises(mx.MXNetError, match="boolean"):
        npx.constraint_check(np.ones((2,)))


class _AssignScalar(HybridBlock):
    def hybrid_forward(self, F, a, mask):
        return F.np._internal.boolean_mask_assign_scalar(a, mask, 42.0, start_axis=1, out=a)


def test_internal_boolean_mask_assign_scalar_writes_in_place_as_setitem():
    data = _RNG.uniform(size=(2, 3, 4)).astype(onp.float32)
    mask = onp.array([[True, False, True, False], [False, False, True, True],
                      [True, True, False, False]])
    a = np.array(data)
    out = _AssignScalar()(a, np.array(mask))
    want = data.copy()
    want[:, mask] = 42.0
    onp.testing.assert_array_equal(out.asnumpy(), want)
    onp.testing.assert_array_equal(a.asnumpy(), want)       # out=a: written in place


@pytest.mark.parametrize("vshape", [(), (1,), (2, 5), (2, 1)])
def test_internal_boolean_mask_assign_tensor_broadcasts_the_value(vshape):
    data = _RNG.uniform(size=(2, 3, 4)).astype(onp.float32)
    mask = onp.array([[True, False, True, True], [False, False, True, True],
                      [False, False, False, False]])              # 5 positions
    value = _RNG.uniform(size=vshape).astype(onp.float32)
    got = np._internal.boolean_mask_assign_tensor(np.array(data), np.array(mask),
                                                  np.array(value), start_axis=1)
    want = data.copy()
    want[:, mask] = value
    assert type(got) is np.ndarray
    onp.testing.assert_array_equal(got.asnumpy(), want)
    onp.testing.assert_array_equal(np.array(data).asnumpy(), data)


def test_internal_boolean_mask_assign_in_a_graph_and_its_errors():
    a, m = _vars("a", "m")
    s = mx.sym.np._internal.boolean_mask_assign_scalar(a, m, -1.0)
    assert isinstance(s, _Symbol)
    mask = A > 0
    got, = _run(s, a=A, m=mask)
    onp.testing.assert_array_equal(got, onp.where(mask, -1.0, A).astype(onp.float32))
    with pytest.raises(mx.MXNetError, match="did not match"):
        np._internal.boolean_mask_assign_scalar(np.array(A), np.array(mask.T), 1.0)
    with pytest.raises(mx.MXNetError, match="same dtype"):
        np._internal.boolean_mask_assign_tensor(np.array(A), np.array(mask),
                                                np.array([1.0], dtype="float64"))
    with pytest.raises(AttributeError):
        np._internal.no_such_op
    assert "boolean_mask_assign_tensor" in dir(mx.nd.np._internal)


def test_boolean_mask_assign_back_propagates_zeros():
    a = np.array(A)
    a.attach_grad()
    with autograd.record():
        y = np._internal.boolean_mask_assign_scalar(a, a > 0, 3.0)
    y.backward()
    onp.testing.assert_array_equal(a.grad.asnumpy(), onp.zeros_like(A))


def test_sym_np_functions_do_not_shadow_builtins_inside_the_module():
    """Looking up mx.sym.np.sum once must not replace builtins.sum in symbol/numpy.py,
    whose indexing code sums Python generators (a hybridized x[:, None, 1] broke)."""
    import gpunda.symbol.numpy as sym_np_module
    assert mx.sym.np.sum is mx.sym.np.sum and mx.sym.np.max is not None
    assert "sum" not in vars(sym_np_module) and "max" not in vars(sym_np_module)
    x = mx.sym.var("x").as_np_ndarray()
    y = x[:, None, 1]
    ex = y.as_nd_ndarray().bind(mx.cpu(), {"x": mx.nd.array(onp.arange(12).reshape(3, 4))})
    onp.testing.assert_array_equal(ex.forward()[0].asnumpy(),
                                   onp.arange(12).reshape(3, 4)[:, None, 1])


def test_np_symbol_nodes_are_named_after_the_function_as_mxnet():
    # MXNet 1.9.1 names an np node after the function that made it (the op name without
    # its _np_/_npi_/_npx_ prefix): recorded from MXNet with the same calls
    x, y = mx.sym.var("x").as_np_ndarray(), mx.sym.var("y").as_np_ndarray()
    with mx.name.NameManager():         # fresh counters, as in a new MXNet process
        made = [mx.sym.np.diagonal(x), mx.sym.np.cumsum(x), mx.sym.np.copy(x),
                mx.sym.np.sum(x),
                mx.sym.np.exp(x), mx.sym.npx.relu(x), mx.sym.np.trace(x),
                mx.sym.npx.sigmoid(x), mx.sym.npx.batch_flatten(x), mx.sym.np.argmax(x),
                x + y, x * 2, x / y]
    names = [json.loads(s.tojson())["nodes"][-1]["name"] for s in made]
    assert names == ["diagonal0", "cumsum0", "copy0", "sum0", "exp0", "relu0", "trace0",
                     "sigmoid0", "batch_flatten0", "argmax0", "add0", "multiply_scalar0",
                     "true_divide0"]


def test_trace_and_atleast_nd_are_mxnet_ops():
    # MXNet 1.9.1 exports np.trace as one _np_trace node and np.atleast_2d as _np_atleast_2d
    # with num_args; the values and gradients below were recorded from it
    x, y = mx.sym.var("x").as_np_ndarray(), mx.sym.var("y").as_np_ndarray()
    node = json.loads(mx.sym.np.trace(x, offset=1).tojson())["nodes"][-1]
    assert node["op"] == "_np_trace" and node["attrs"]["offset"] == "1"
    node = json.loads(mx.sym.np.atleast_2d(x, y)[0].tojson())["nodes"][-1]
    assert node["op"] == "_np_atleast_2d" and node["attrs"] == {"num_args": "2"}
    a = np.array([[1., 2, 3], [4, 5, 6]])
    a.attach_grad()
    with autograd.record():
        t = np.trace(a, offset=1)
    t.backward()
    assert float(t) == 8.0
    assert a.grad.asnumpy().tolist() == [[0, 1, 0], [0, 0, 1]]
    b = np.arange(24.).reshape(2, 3, 4)
    b.attach_grad()
    with autograd.record():
        t = np.trace(b, offset=-1, axis1=2, axis2=0)
    t.backward(np.array([1., 2, 3]))
    assert t.asnumpy().tolist() == [15, 23, 31]
    want = onp.zeros((2, 3, 4))
    want[0, :, 1] = want[1, :, 2] = [1, 2, 3]
    onp.testing.assert_array_equal(b.grad.asnumpy(), want)
    s = mx.sym.load_json(mx.sym.np.trace(x, offset=-1, axis1=2, axis2=0).tojson())
    got = s.as_nd_ndarray().eval(x=mx.nd.arange(24).reshape((2, 3, 4)))[0]
    assert got.asnumpy().tolist() == [15, 23, 31]
    assert np.atleast_3d(np.array([1., 2])).shape == (1, 2, 1)
    assert [z.shape for z in np.atleast_2d(np.ones(3), np.ones((2, 2)))] == [(1, 3), (2, 2)]
