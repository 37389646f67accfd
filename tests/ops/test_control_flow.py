"""contrib.foreach / while_loop / cond: imperative (nd) and symbolic (sym, _foreach,
_while_loop, _cond nodes with subgraphs).

References: NumPy loops, central finite differences, and MXNet 1.9.1's outputs and
gradients on fixed inputs (its graph JSON for while_loop is loaded as is).
"""
import json
import pickle

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda import gluon
from gpunda.base import GpundaError

nd, sym = mx.nd, mx.sym


def _vals():
    rng = np.random.default_rng(11)
    names_shapes = [("d", (4, 3)), ("s", (3,)), ("w", (3,)), ("x", (3,)), ("i", None),
                    ("a", (3,)), ("b", (3,))]
    out = {}
    for n, shp in names_shapes:
        out[n] = np.array([0.0]) if shp is None else rng.uniform(size=shp)
    return out


def _head_grads(outs):
    return [nd.array(np.linspace(0.5, 1.5, o.size).reshape(o.shape)) for o in outs]


def _run(g, vals, names, dtype="float32"):
    args = {n: nd.array(vals[n], dtype=dtype) for n in names}
    grads = {n: nd.zeros(vals[n].shape, dtype=dtype) for n in names}
    ex = g.bind(mx.current_context(), args, args_grad=grads)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([h.astype(dtype) for h in _head_grads(ex.outputs)])
    return outs, {n: grads[n].asnumpy() for n in names}


def _closure_foreach():
    w, x = sym.var("w"), sym.var("x")
    e = sym.exp(x)

    def step(data, states):
        out = data * w + e * states[0]
        return out, [sym.tanh(out) + w]
    outs, states = sym.contrib.foreach(step, sym.var("d"), [sym.var("s")])
    return sym.Group([outs] + states)


def _while():
    w = sym.var("w")
    outs, final = sym.contrib.while_loop(
        lambda i, s: i < 3,
        lambda i, s: ([sym.broadcast_mul(s, i), sym.sin(s + w)], [i + 1, s * w + 0.5]),
        [sym.var("i"), sym.var("s")], max_iterations=5)
    return sym.Group(outs + final)


def _cond(threshold):
    a, b, w = sym.var("a"), sym.var("b"), sym.var("w")
    return sym.Group(sym.contrib.cond(a.sum() < threshold, lambda: [a * 2 + w, sym.exp(b)],
                                      lambda: [b * w, a - b]))


# ------------------------------------------------------------------ against MXNet 1.9.1


def test_foreach_with_closures_matches_mxnet():
    g = _closure_foreach()
    assert g.list_arguments() == ["d", "s", "w", "x"]
    outs, grads = _run(g, _vals(), ["d", "s", "w", "x"])
    np.testing.assert_allclose(outs[0].ravel()[[0, 5, 11]],
                               [1.601399540901184, 3.4128832817077637, 4.2947468757629395],
                               rtol=1e-5)
    np.testing.assert_allclose(outs[1], [1.7878096103668213, 1.6665486097335815,
                                         1.5120103359222412], rtol=1e-5)
    np.testing.assert_allclose(grads["w"], [8.629021644592285, 8.61762809753418,
                                            15.622514724731445], rtol=1e-5)
    np.testing.assert_allclose(grads["x"], [13.726483345031738, 10.269913673400879,
                                            14.72143268585205], rtol=1e-5)
    node = json.loads(g.tojson())["nodes"][-1]
    assert node["op"] == "_foreach"
    assert node["attrs"] == {"in_data_locs": "[0]", "in_state_locs": "[3]", "num_args": "5",
                             "num_out_data": "1", "num_outputs": "2", "remain_locs": "[1, 2]"}
    names = [n["name"] for n in node["subgraphs"][0]["nodes"] if n["op"] == "null"]
    # the outer exp(x) is cut into a variable named after its output, as in MXNet
    assert names[:2] == ["d-0", "w"] and names[3] == "s-0"
    assert names[2].startswith("exp") and names[2].endswith("_output")


# MXNet 1.9.1's JSON of _while() (names as MXNet numbered them)
_MXNET_WHILE_JSON = (
    '{"nodes":[{"op":"null","name":"i","inputs":[]},{"op":"null","name":"s","inputs":[]},'
    '{"op":"null","name":"w","inputs":[]},{"op":"_while_loop","name":"_while_loop0","attrs":'
    '{"cond_input_locs":"[0]","func_input_locs":"[1, 0, 2]","func_var_locs":"[1, 0]",'
    '"max_iterations":"5","num_args":"5","num_out_data":"2","num_outputs":"4"},"inputs":'
    '[[0,0,0],[1,0,0],[2,0,0]],"subgraphs":[{"nodes":[{"op":"null","name":"i-0","attrs":'
    '{"__subgraph_name__":"while_loop_cond0"},"inputs":[]},{"op":"_lesser_scalar","name":'
    '"_lesser_scalar0","attrs":{"__subgraph_name__":"while_loop_cond0","scalar":"3"},'
    '"inputs":[[0,0,0]]}],"arg_nodes":[0],"node_row_ptr":[0,1,2],"heads":[[1,0,0]]},'
    '{"nodes":[{"op":"null","name":"s-0","attrs":{"__subgraph_name__":"while_loop_func0"},'
    '"inputs":[]},{"op":"null","name":"i-0","attrs":{"__subgraph_name__":"while_loop_func0"},'
    '"inputs":[]},{"op":"broadcast_mul","name":"broadcast_mul0","attrs":{"__subgraph_name__":'
    '"while_loop_func0"},"inputs":[[0,0,0],[1,0,0]]},{"op":"null","name":"w","inputs":[]},'
    '{"op":"elemwise_add","name":"_plus2","attrs":{"__subgraph_name__":"while_loop_func0"},'
    '"inputs":[[0,0,0],[3,0,0]]},{"op":"sin","name":"sin0","attrs":{"__subgraph_name__":'
    '"while_loop_func0"},"inputs":[[4,0,0]]},{"op":"_plus_scalar","name":"_plusscalar0",'
    '"attrs":{"__subgraph_name__":"while_loop_func0","scalar":"1"},"inputs":[[1,0,0]]},'
    '{"op":"elemwise_mul","name":"_mul2","attrs":{"__subgraph_name__":"while_loop_func0"},'
    '"inputs":[[0,0,0],[3,0,0]]},{"op":"_plus_scalar","name":"_plusscalar1","attrs":'
    '{"__subgraph_name__":"while_loop_func0","scalar":"0.5"},"inputs":[[7,0,0]]}],'
    '"arg_nodes":[0,1,3],"node_row_ptr":[0,1,2,3,4,5,6,7,8,9],"heads":[[2,0,0],[5,0,0],'
    '[6,0,0],[8,0,0]]}]}],"arg_nodes":[0,1,2],"node_row_ptr":[0,1,2,3,7],"heads":[[3,0,0],'
    '[3,1,0],[3,2,0],[3,3,0]],"attrs":{"mxnet_version":["int",10901]}}')


@pytest.mark.parametrize("source", ["gpunda", "mxnet_json"])
def test_while_loop_matches_mxnet(source):
    g = _while() if source == "gpunda" else sym.load_json(_MXNET_WHILE_JSON)
    outs, grads = _run(g, _vals(), ["i", "s", "w"])
    assert [o.shape for o in outs] == [(5, 3), (5, 3), (1,), (3,)]
    np.testing.assert_allclose(outs[1][:3].ravel()[[0, 4, 8]],
                               [0.9928189516067505, 0.9767884016036987, 0.9648297429084778],
                               rtol=1e-5)
    assert np.all(outs[0][3:] == 0) and np.all(outs[1][3:] == 0)   # padding: zeros
    np.testing.assert_allclose(outs[2], [3.0])
    np.testing.assert_allclose(outs[3], [1.5289034843444824, 1.142808437347412,
                                         0.9060182571411133], rtol=1e-5)
    np.testing.assert_allclose(grads["s"], [1.5991382598876953, 2.1476948261260986,
                                            1.9949228763580322], rtol=1e-5)
    np.testing.assert_allclose(grads["w"], [3.2015762329101562, 3.935885190963745,
                                            4.60524320602417], rtol=1e-5)
    if source == "gpunda":
        attrs = json.loads(g.tojson())["nodes"][-1]["attrs"]
        assert attrs == json.loads(_MXNET_WHILE_JSON)["nodes"][-1]["attrs"]


def test_cond_matches_mxnet():
    outs, grads = _run(_cond(5.0), _vals(), ["a", "b", "w"])
    np.testing.assert_allclose(outs[0], [1.1970584392547607, 1.7778213024139404,
                                         1.4796316623687744], rtol=1e-5)
    np.testing.assert_allclose(grads["a"], [1.0, 2.0, 3.0])
    outs, grads = _run(_cond(0.1), _vals(), ["a", "b", "w"])
    np.testing.assert_allclose(outs[1], [-0.14876538515090942, -0.03786492347717285,
                                         0.2483234703540802], rtol=1e-5)
    np.testing.assert_allclose(grads["w"], [0.1766374260187149, 0.5915952920913696,
                                            0.3529518246650696], rtol=1e-5)


# ----------------------------------------------------------------- finite differences


def _fd_check(g, vals, wrt):
    """Executor gradients (float64) against central differences of sum(out * head)."""
    names = g.list_arguments()
    outs, grads = _run(g, vals, names, dtype="float64")
    heads = [h.asnumpy() for h in _head_grads([nd.zeros(o.shape) for o in outs])]

    def objective(v):
        ex = g.bind(mx.current_context(), {n: nd.array(v[n], dtype="float64") for n in names})
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(ex.forward(), heads))
    eps = 1e-6
    for n in wrt:
        num = np.zeros_like(vals[n])
        for k in np.ndindex(vals[n].shape):
            plus = {m: vals[m].copy() for m in names}
            minus = {m: vals[m].copy() for m in names}
            plus[n][k] += eps
            minus[n][k] -= eps
            num[k] = (objective(plus) - objective(minus)) / (2 * eps)
        np.testing.assert_allclose(grads[n], num, rtol=1e-6, atol=1e-8, err_msg=n)


@pytest.mark.parametrize("make,names", [(_closure_foreach, ["d", "s", "w", "x"]),
                                        (_while, ["s", "w"]),
                                        (lambda: _cond(5.0), ["a", "b", "w"]),
                                        (lambda: _cond(0.1), ["a", "b", "w"])])
def test_gradients_match_finite_differences(make, names):
    _fd_check(make(), _vals(), names)


def test_nested_foreach_gradient():
    w = sym.var("w")

    def outer(row, states):
        def inner(x, st):
            y = x * w + st[0]
            return y, [y]
        ys, last = sym.contrib.foreach(inner, row, [states[0]])
        return ys, [last[0] * 0.5]
    outs, st = sym.contrib.foreach(outer, sym.var("d"), [sym.var("s")])
    g = sym.Group([outs] + st)
    vals = {"d": np.random.default_rng(2).uniform(size=(3, 4, 1)), "s": np.array([0.3]),
            "w": np.array([1.2])}
    # a NumPy reference of the forward
    d, s, wv = vals["d"][..., 0], 0.3, 1.2
    want = np.zeros((3, 4, 1))
    for r in range(3):
        for c in range(4):
            s = d[r, c] * wv + s
            want[r, c, 0] = s
        s *= 0.5
    got, _ = _run(g, vals, ["d", "s", "w"], dtype="float64")
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    np.testing.assert_allclose(got[1], [s], rtol=1e-12)
    _fd_check(g, vals, ["d", "s", "w"])


# ------------------------------------------------------------------ graph mechanics


def test_json_round_trip_and_pickle():
    for g in (_closure_foreach(), _while(), _cond(1.0)):
        text = g.tojson()
        g2 = sym.load_json(text)
        assert g2.tojson() == text
        g3 = pickle.loads(pickle.dumps(g))
        a, _ = _run(g, _vals(), g.list_arguments())
        b, _ = _run(g3, _vals(), g.list_arguments())
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_infer_shape_reaches_into_the_body():
    def step(x, states):
        h = sym.FullyConnected(x, num_hidden=4, name="fc") + states[0]
        return h, [h]
    outs, st = sym.contrib.foreach(step, sym.var("data"), [sym.var("h")])
    g = sym.Group([outs] + st)
    assert g.list_arguments() == ["data", "h", "fc_weight", "fc_bias"]      # as MXNet's
    args, outs_s, _ = g.infer_shape(data=(6, 2, 3), h=(2, 4))
    assert args == [(6, 2, 3), (2, 4), (4, 3), (4,)]
    assert outs_s == [(6, 2, 4), (2, 4)]
    _, out_t, _ = g.infer_type(data="float64")
    assert out_t == [np.float64, np.float64]
    # MXNet 1.9.1 cannot infer these (it returns None); gpunda infers the body
    w_outs, w_st = sym.contrib.while_loop(lambda i: i < 2, lambda i: ([i * 2], [i + 1]),
                                          [sym.var("i")], max_iterations=7)
    _, shapes, _ = sym.Group(w_outs + w_st).infer_shape(i=(1,))
    assert shapes == [(7, 1), (1,)]


def test_while_loop_that_runs_no_step():
    outs, final = sym.contrib.while_loop(lambda i: i < 0, lambda i: ([i * 2, i + 3], [i + 1]),
                                         [sym.var("i")], max_iterations=3)
    ex = sym.Group(outs + final).bind(mx.cpu(), {"i": nd.array([5.0])})
    res = [o.asnumpy() for o in ex.forward()]
    assert [r.shape for r in res] == [(3, 1), (3, 1), (1,)]
    assert np.all(res[0] == 0) and res[2][0] == 5.0


def test_hybridized_block_with_foreach():
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = gluon.nn.Dense(4, flatten=False)

        def hybrid_forward(self, F, x, h):
            def step(xt, states):
                out = F.tanh(self.dense(xt) + states[0])
                return out, [out]
            outs, st = F.contrib.foreach(step, x, [h])
            return outs, st[0]

    x = nd.array(np.random.default_rng(0).uniform(size=(5, 2, 3)))
    h = nd.zeros((2, 4))
    net = Net()
    net.initialize()
    results = []
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        with ag.record():
            o, s = net(x, h)
            loss = o.sum() + s.sum()
        loss.backward()
        results.append((o.asnumpy(), net.dense.weight.grad().asnumpy().copy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5)


def test_create_graph_first_order_and_second_order_raises():
    g = _closure_foreach()
    cop = nd.CachedOp(g)
    vals = _vals()
    args = [nd.array(vals[n]) for n in g.list_inputs()]
    for a in args:
        a.attach_grad()
    grads = []
    for create in (False, True):
        with ag.record():
            loss = cop(*args)[0].sum()
        grads.append(ag.grad(loss, [args[2]], create_graph=create)[0])
    np.testing.assert_allclose(grads[1].asnumpy(), grads[0].asnumpy(), rtol=1e-6)
    with ag.record():
        y = (grads[1] * grads[1]).sum()
    with pytest.raises(GpundaError, match="non-differentiable because it didn.t register FGradient"):
        y.backward()


# ------------------------------------------------------------------------ imperative


def test_nd_foreach_matches_a_loop_and_differentiates():
    rng = np.random.default_rng(3)
    d, s0, w = rng.uniform(size=(4, 3)), rng.uniform(size=3), rng.uniform(size=3)
    data, state, weight = nd.array(d), nd.array(s0), nd.array(w)
    for a in (data, state, weight):
        a.attach_grad()
    with ag.record():
        outs, states = nd.contrib.foreach(lambda x, s: (x * weight + s[0], [s[0] * 2]),
                                          data, [state])
        loss = (outs * outs).sum() + states[0].sum()
    loss.backward()
    want = np.stack([d[t] * w + s0 * 2 ** t for t in range(4)])
    np.testing.assert_allclose(outs.asnumpy(), want, rtol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), s0 * 16, rtol=1e-6)
    np.testing.assert_allclose(weight.grad.asnumpy(), (2 * want * d).sum(0), rtol=1e-5)
    # a list of data arrays and nested outputs
    outs, states = nd.contrib.foreach(lambda xs, s: ([xs[0] + xs[1], [xs[0]]], s),
                                      [data, data * 2], [state])
    np.testing.assert_allclose(outs[0].asnumpy(), 3 * d, rtol=1e-6)
    np.testing.assert_allclose(outs[1][0].asnumpy(), d, rtol=1e-6)


def test_nd_while_loop_pads_and_cond_branches():
    i = nd.array([0.0])
    outs, final = nd.contrib.while_loop(lambda i, s: i < 3, lambda i, s: (i * 10, [i + 1, s + i]),
                                        [i, nd.array([0.0])], max_iterations=5)
    assert outs.shape == (5, 1)       # one step output: an NDArray, as in MXNet
    np.testing.assert_allclose(outs.asnumpy().ravel(), [0, 10, 20, 0, 0])
    assert final[0].asscalar() == 3 and final[1].asscalar() == 3
    outs, final = nd.contrib.while_loop(lambda x: x < 0, lambda x: (x, x + 1), nd.array([1.0]),
                                        max_iterations=2)
    assert outs == [] and final.asscalar() == 1
    with pytest.raises(ValueError, match="max_iterations"):
        nd.contrib.while_loop(lambda x: x < 0, lambda x: (x, x), [i])
    a = nd.array([2.0])
    assert nd.contrib.cond(a > 1, lambda: a * 3, lambda: a - 1).asscalar() == 6
    assert nd.contrib.cond(a > 5, lambda: a * 3, lambda: a - 1).asscalar() == 1


def test_symbolic_errors():
    with pytest.raises(AssertionError, match="used in the loop body"):
        sym.contrib.foreach(lambda x, s: (s[0] * 2, s), sym.var("d"), [sym.var("s")])
    with pytest.raises(ValueError, match="max_iterations"):
        sym.contrib.while_loop(lambda i: i < 1, lambda i: ([], [i + 1]), [sym.var("i")])
    with pytest.raises(ValueError, match="differs"):
        sym.contrib.cond(sym.var("p"), lambda: [sym.var("a")],
                         lambda: [sym.var("a"), sym.var("b")])
    outs, final = sym.contrib.while_loop(lambda i: i, lambda i: ([], [i + 1]), [sym.var("i")],
                                         max_iterations=2)
    ex = sym.Group(final).bind(mx.cpu(), {"i": nd.ones((2,))})
    with pytest.raises(GpundaError, match="scalar"):
        ex.forward()


# ---- mx.sym.contrib's private helpers (MXNet 1.9.1's python/mxnet/symbol/contrib.py),
# ---- answers recorded from MXNet 1.9.1 (/work/mxref) on the same graphs

def test_sym_contrib_flatten_regroup_and_names_match_mxnet():
    C = sym.contrib
    a, b, c = sym.var("a"), sym.var("b"), sym.var("c")
    flat, fmt = C._flatten([a, [b, c], sym.Group([a, b])], "inputs")
    assert [s.name for s in flat] == ["a", "b", "c", None] and fmt == [0, [0, 0], 2]
    flat, fmt = C._flatten(a, "x")
    assert [s.name for s in flat] == ["a"] and fmt == 0
    with pytest.raises(AssertionError, match="loop_vars must be \\(nested\\) list of Symbol"):
        C._flatten([a, 3], "loop_vars")
    assert C._regroup([1, 2, 3, 4, 5], [0, [0, 0], 2]) == ([1, [2, 3], [4, 5]], [])
    assert C._regroup([1, 2], 0) == (1, [2]) and C._regroup([1, 2, 3], 2) == ([1, 2], [3])
    fc = sym.FullyConnected(a, num_hidden=2, name="fc")
    sp = sym.split(a, num_outputs=2, name="sp")
    assert [C._get_sym_uniq_name(s) for s in (a, fc, sp[1])] == ["a-0", "fc-0", "sp-1"]
    mx.attribute.AttrScope._subgraph_names.clear()
    assert [C._get_unique_subgraph_name(n) for n in ("foreach", "foreach", "cond")] == [
        "foreach0", "foreach1", "cond0"]
    with mx.AttrScope(__subgraph_name__="outer0"):
        assert C._get_unique_subgraph_name("while_loop") == "outer0$while_loop0"


def test_sym_contrib_graph_inputs_and_cut_subgraph_match_mxnet():
    C = sym.contrib
    a, b, c = sym.var("a"), sym.var("b"), sym.var("c")
    assert [s.name for s in C._get_graph_inputs((a + b) * a + sym.sin(c))] == ["a", "b", "a",
                                                                               "c"]
    assert [s.name for s in C._get_graph_inputs(sym.FullyConnected(a, num_hidden=2,
                                                                   name="f2"))] == [
        "a", "f2_weight", "f2_bias"]
    assert C._get_graph_inputs(a) == []
    outer = sym.exp(b, name="outer_exp")
    with mx.AttrScope(__subgraph_name__="sg0"):
        x = sym.var("x")
        z = sym.elemwise_mul(sym.elemwise_add(x, outer, name="add1"), outer, name="mul1")
        w = sym.elemwise_sub(z, a, name="sub1")
    cut = C._cut_subgraph(w)
    # one Symbol per edge cut; the graph now reads new variables named after the entries
    assert [s.name for s in cut] == ["outer_exp", "outer_exp", "a"]
    assert [s.list_outputs() for s in cut] == [["outer_exp_output"], ["outer_exp_output"],
                                               ["a"]]
    assert w.list_arguments() == ["x", "outer_exp_output", "a"]
    assert outer.list_inputs() == ["b"]
    out = w.eval(ctx=mx.cpu(), x=nd.array([1.]), outer_exp_output=nd.array([2.]),
                 a=nd.array([10.]))
    assert out[0].asnumpy().tolist() == [-4.0]
    assert C._cut_subgraph(sym.sin(a)) == []


def test_sym_contrib_construct_subgraph_and_check_data_match_mxnet():
    C = sym.contrib
    b = sym.var("b")
    with mx.name.NameManager(), mx.AttrScope(__subgraph_name__="sg1"):
        p = sym.var("p")
        q = sym.sin(p, name="sinp")
        g = C._construct_subgraph([q, p], [q, b], "sg1")
    assert g.list_outputs() == ["sinp_output", "identity0_output", "identity1_output",
                                "identity2_output"]
    assert g.list_inputs() == ["p", "b"]
    assert C._construct_subgraph(q, [], "sg1").list_outputs() == ["sinp_output"]
    C._check_data([nd.ones(1)], nd.NDArray, "m")
    C._check_data(nd.ones(1), nd.NDArray, "m")
    for bad in ([nd.ones(1), 3], 3):
        with pytest.raises(AssertionError, match="data should be an NDArray"):
            C._check_data(bad, nd.NDArray, "data should be an NDArray")
