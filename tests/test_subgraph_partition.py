"""Graph partitioning by op names (gpunda/_frontend/subgraph.py): MXNet's C-API test entry
points (MXBuildSubgraphByOpNames, MXSetSubgraphPropertyOpNames(V2), ...),
``Symbol.optimize_for`` / ``get_backend_symbol``, ``MXNET_SUBGRAPH_BACKEND`` in the
executor and Gluon's ``hybridize(backend=...)``.

References: the partitioned graphs' node lists (op, name, input entries; each _CachedOp's
subgraph and heads), names, inferred shapes and training numbers recorded from MXNet
1.9.1 (/work/mxref) on the same graphs; outputs and gradients of the unpartitioned graph.
"""
import ctypes
import json
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda import base
from gpunda.base import GpundaError, SymbolHandle, _LIB, c_str, c_str_array, check_call, mx_uint
from gpunda.symbol import Symbol

sym = mx.sym


@pytest.fixture(autouse=True)
def _fresh_properties():
    """The registry's op names and dedup flags are process state (as in MXNet): each test
    starts and ends without them."""
    from gpunda._frontend import subgraph

    def reset():
        subgraph._v1_op_names.clear()
        for name in ("default", "default_v2"):
            for prop in subgraph.get_backend(name).properties:
                prop.attrs.pop("op_names", None)
                prop.dedup_subgraph = False
    reset()
    yield
    reset()


def _part(s, backend, ops):
    out = SymbolHandle()
    check_call(_LIB.MXBuildSubgraphByOpNames(s.handle, c_str(backend), mx_uint(len(ops)),
                                             c_str_array(ops), ctypes.byref(out)))
    return Symbol(out)


def _set_v2(backend, ops):
    check_call(_LIB.MXSetSubgraphPropertyOpNamesV2(c_str(backend), mx_uint(len(ops)),
                                                   c_str_array(ops)))


def _nodes(g):
    res = []
    for n in g["nodes"]:
        item = [n["op"], n["name"], [e[:2] for e in n["inputs"]]]
        if "subgraphs" in n:
            sg = n["subgraphs"][0]
            item.append([_nodes(sg), [e[:2] for e in sg["heads"]]])
        res.append(item)
    return res


def _summary(s):
    g = json.loads(s.tojson())
    return [_nodes(g), [e[:2] for e in g["heads"]]]


# -- the graphs (MXNet's test_subgraph_op network structures, with fixed names) ----------
def g_cycle():
    # exp feeds cos (not selected) and sin (selected): grouping exp, sin and add together
    # would make a cycle through cos
    data = sym.var("data")
    e = sym.exp(data, name="e")
    return sym.elemwise_add(sym.cos(e, name="c"), sym.sin(e, name="s"), name="add")


def g_chain():
    # sin and add are adjacent but joined through six outside cos nodes too
    data = sym.var("data")
    s = c = sym.sin(data, name="s")
    for k in range(6):
        c = sym.cos(c, name=f"c{k}")
    return sym.elemwise_add(s, c, name="add")


def g_shared():
    # two group nodes read one input; two outside nodes read one group output
    data = sym.var("data")
    p = sym.elemwise_add(sym.sin(data, name="s1"), sym.sin(data, name="s2"), name="p")
    return sym.elemwise_sub(sym.cos(p, name="c1"), sym.cos(p, name="c2"), name="out")


def g_bn():
    data = sym.var("data")
    e = sym.exp(data, name="e")
    r = sym.elemwise_add(sym.cos(e, name="c"), sym.sin(e, name="s"), name="add")
    return sym.BatchNorm(sym.BatchNorm(r, name="bn1"), name="bn2")


def g_dup():
    e = sym.exp(sym.var("data"), name="e")
    return sym.Group([e, e, e])


# -- MXNet 1.9.1's partitioned graphs ---------------------------------------------------
CYCLE = [[["null", "data", []], ["_CachedOp", "_CachedOp0", [[0, 0]], [[["null", "data0", []], ["exp", "e", [[0, 0]]], ["sin", "s", [[1, 0]]]], [[1, 0], [2, 0]]]], ["cos", "c", [[1, 0]]], ["_CachedOp", "_CachedOp1", [[2, 0], [1, 1]], [[["null", "c_output0", []], ["null", "_CachedOp0_s_output0", []], ["elemwise_add", "add", [[0, 0], [1, 0]]]], [[2, 0]]]]], [[3, 0]]]  # noqa: E501
CHAIN = [[["null", "data", []], ["_CachedOp", "_CachedOp0", [[0, 0]], [[["null", "data0", []], ["sin", "s", [[0, 0]]]], [[1, 0], [1, 0]]]], ["cos", "c0", [[1, 1]]], ["cos", "c1", [[2, 0]]], ["cos", "c2", [[3, 0]]], ["cos", "c3", [[4, 0]]], ["cos", "c4", [[5, 0]]], ["cos", "c5", [[6, 0]]], ["_CachedOp", "_CachedOp1", [[1, 0], [7, 0]], [[["null", "_CachedOp0_s_output0", []], ["null", "c5_output0", []], ["elemwise_add", "add", [[0, 0], [1, 0]]]], [[2, 0]]]]], [[8, 0]]]  # noqa: E501
SHARED = [[["null", "data", []], ["_CachedOp", "_CachedOp0", [[0, 0], [0, 0]], [[["null", "data0", []], ["sin", "s1", [[0, 0]]], ["null", "data1", []], ["sin", "s2", [[2, 0]]], ["elemwise_add", "p", [[1, 0], [3, 0]]]], [[4, 0], [4, 0]]]], ["cos", "c1", [[1, 0]]], ["cos", "c2", [[1, 1]]], ["elemwise_sub", "out", [[2, 0], [3, 0]]]], [[4, 0]]]  # noqa: E501
SHARED_DEDUP = [[["null", "data", []], ["_CachedOp", "_CachedOp0", [[0, 0]], [[["null", "data0", []], ["sin", "s1", [[0, 0]]], ["sin", "s2", [[0, 0]]], ["elemwise_add", "p", [[1, 0], [2, 0]]]], [[3, 0]]]], ["cos", "c1", [[1, 0]]], ["cos", "c2", [[1, 0]]], ["elemwise_sub", "out", [[2, 0], [3, 0]]]], [[4, 0]]]  # noqa: E501
BN = [[["null", "data", []], ["_CachedOp", "_CachedOp0", [[0, 0]], [[["null", "data0", []], ["exp", "e", [[0, 0]]]], [[1, 0], [1, 0]]]], ["cos", "c", [[1, 0]]], ["sin", "s", [[1, 1]]], ["elemwise_add", "add", [[2, 0], [3, 0]]], ["null", "bn1_gamma", []], ["null", "bn1_beta", []], ["null", "bn1_moving_mean", []], ["null", "bn1_moving_var", []], ["null", "bn2_gamma", []], ["null", "bn2_beta", []], ["null", "bn2_moving_mean", []], ["null", "bn2_moving_var", []], ["_CachedOp", "_CachedOp1", [[4, 0], [5, 0], [6, 0], [7, 0], [8, 0], [9, 0], [10, 0], [11, 0], [12, 0]], [[["null", "add_output0", []], ["null", "bn1_gamma0", []], ["null", "bn1_beta0", []], ["null", "bn1_moving_mean0", []], ["null", "bn1_moving_var0", []], ["BatchNorm", "bn1", [[0, 0], [1, 0], [2, 0], [3, 0], [4, 0]]], ["null", "bn2_gamma0", []], ["null", "bn2_beta0", []], ["null", "bn2_moving_mean0", []], ["null", "bn2_moving_var0", []], ["BatchNorm", "bn2", [[5, 0], [6, 0], [7, 0], [8, 0], [9, 0]]]], [[10, 0]]]]], [[13, 0]]]  # noqa: E501
DUP = [[["null", "data", []], ["_CachedOp", "_CachedOp0", [[0, 0]], [[["null", "data0", []], ["exp", "e", [[0, 0]]]], [[1, 0], [1, 0], [1, 0]]]]], [[1, 0], [1, 1], [1, 2]]]  # noqa: E501


@pytest.mark.parametrize("make, backend, ops, want", [
    (g_cycle, "default", ["exp", "sin", "elemwise_add"], CYCLE),
    (g_chain, "default", ["sin", "elemwise_add"], CHAIN),
    (g_shared, "default_v2", ["sin", "elemwise_add"], SHARED),
    (g_bn, "default", ["exp", "BatchNorm"], BN),
    (g_dup, "default_v2", ["exp"], DUP),
], ids=["cycle", "chain", "shared", "bn", "dup"])
def test_build_subgraph_by_op_names_groups_as_mxnet(make, backend, ops, want):
    s = make()
    p = _part(s, backend, ops)
    assert _summary(p) == want
    assert p.list_inputs() == s.list_inputs()
    assert p.list_arguments() == s.list_arguments()
    assert p.list_auxiliary_states() == s.list_auxiliary_states()
    # the input graph is left as it was
    assert "_CachedOp" not in s.tojson()


def test_partitioned_names_as_mxnet():
    p = _part(g_bn(), "default", ["exp", "BatchNorm"])
    assert p.list_outputs() == ["_CachedOp1_bn2_output"]
    assert p.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var",
                                         "bn2_moving_mean", "bn2_moving_var"]
    # an entry given out three times: MXNet's CachedOp names the repeats after _copy nodes
    assert _part(g_dup(), "default", ["exp"]).list_outputs() == [
        "_CachedOp0_e_output", "_CachedOp0_e_copy0_output", "_CachedOp0_e_copy0_0_copy_output"]


def test_no_op_names_gives_a_copy():
    s = g_cycle()
    p = _part(s, "no such backend is looked up", [])
    assert p is not s and p.tojson() == s.tojson()


def test_optimize_for_dedup_shares_inputs_and_outputs_as_mxnet():
    _set_v2("default_v2", ["sin", "elemwise_add"])
    s = g_shared()
    assert _summary(s.optimize_for("default_v2", dedup_subgraph=True)) == SHARED_DEDUP
    assert _summary(s.optimize_for("default_v2")) == SHARED
    check_call(_LIB.MXRemoveSubgraphPropertyOpNamesV2(c_str("default_v2")))
    with pytest.raises(GpundaError, match="op_names"):
        s.optimize_for("default_v2")


def test_dedup_flag_stays_on_the_property_as_in_mxnet():
    # optimize_for(dedup_subgraph=True) leaves the property's flag set: a later
    # MXBuildSubgraphByOpNames keeps one subgraph output per use but points both
    # consumers at the first (MXNet 1.9.1's graph, recorded after the same two calls)
    _set_v2("default_v2", ["sin", "elemwise_add"])
    g_shared().optimize_for("default_v2", dedup_subgraph=True)
    want = json.loads(json.dumps(SHARED))
    want[0][3][2] = [[1, 0]]        # c2 reads output 0 too
    p = _part(g_shared(), "default_v2", ["sin", "elemwise_add"])
    assert _summary(p) == want
    vals = {"data": np.linspace(0.1, 0.9, 6, dtype="float32").reshape(2, 3)}
    np.testing.assert_allclose(_run(p, vals)[0][0], _run(g_shared(), vals)[0][0], atol=1e-7)


def test_get_backend_symbol_and_mxgenbackendsubgraph():
    _set_v2("default", ["exp", "sin", "elemwise_add"])
    assert _summary(g_cycle().get_backend_symbol("default")) == CYCLE
    out = SymbolHandle()
    check_call(_LIB.MXGenBackendSubgraph(g_cycle().handle, c_str("default"), ctypes.byref(out)))
    assert _summary(Symbol(out)) == CYCLE


def _run(s, vals, grad=True):
    args = {n: mx.nd.array(vals[n]) for n in s.list_arguments()}
    aux = {n: mx.nd.array(vals[n]) for n in s.list_auxiliary_states()}
    grads = {n: mx.nd.zeros(vals[n].shape) for n in s.list_arguments()} if grad else None
    ex = s.bind(mx.cpu(), args, args_grad=grads, aux_states=aux,
                grad_req="write" if grad else "null")
    outs = [o.asnumpy() for o in ex.forward(is_train=grad)]
    if grad:
        ex.backward([mx.nd.array(np.linspace(-1, 1, o.size).reshape(o.shape)) for o in outs])
    return (outs, {n: g.asnumpy() for n, g in (grads or {}).items()},
            {n: a.asnumpy() for n, a in aux.items()})


def test_outputs_gradients_and_aux_updates_match_the_unpartitioned_graph():
    s = g_bn()
    rng = np.random.RandomState(0)
    vals = {n: rng.uniform(0.1, 1, sh).astype("float32")
            for n, sh in zip(s.list_inputs(), [(2, 3, 4)] + [(3,)] * 8)}
    o1, g1, a1 = _run(s, vals)
    for ops in (["exp", "sin", "elemwise_add", "BatchNorm"], ["exp", "BatchNorm"], ["cos"]):
        p = _part(s, "default", ops)
        assert "_CachedOp" in p.tojson()
        o2, g2, a2 = _run(p, vals)
        np.testing.assert_allclose(o2[0], o1[0], rtol=1e-6, atol=1e-6)
        for n in g1:
            np.testing.assert_allclose(g2[n], g1[n], rtol=1e-5, atol=1e-6, err_msg=n)
        for n in a1:        # the moving statistics are updated once, as unpartitioned
            np.testing.assert_allclose(a2[n], a1[n], rtol=1e-6, err_msg=n)
    # MXNet 1.9.1's numbers on these inputs
    assert abs(float(o1[0].sum()) - 13.044193267822266) < 1e-4
    assert abs(float(g1["data"].sum()) - 1.9318256378173828) < 1e-4
    np.testing.assert_allclose(a1["bn1_moving_mean"],
                               [0.37286290526390076, 0.7634429931640625, 0.48826634883880615],
                               rtol=1e-6)


@pytest.mark.parametrize("make, ops", [(g_cycle, ["exp", "sin", "elemwise_add"]),
                                       (g_chain, ["sin", "elemwise_add"]),
                                       (g_shared, ["sin", "elemwise_add"]),
                                       (g_dup, ["exp"])])
def test_partitioned_graph_computes_the_same(make, ops):
    s = make()
    vals = {"data": np.linspace(0.1, 0.9, 6, dtype="float32").reshape(2, 3)}
    o1, g1, _ = _run(s, vals)
    for dedup in (False, True):
        _set_v2("default", ops)
        o2, g2, _ = _run(s.optimize_for("default", dedup_subgraph=dedup), vals)
        for a, b in zip(o1, o2):
            np.testing.assert_allclose(b, a, rtol=1e-6)
        np.testing.assert_allclose(g2["data"], g1["data"], rtol=1e-5, atol=1e-6)


def test_shapes_infer_through_a_subgraph_node_both_ways():
    # the weight's unknown dimension comes back from the convolution through sin's node
    d1 = sym.var("data1", shape=(3, 3, 10, 10))
    d2 = sym.var("data2", shape=(1, 0, 2, 2))
    conv = sym.Convolution(data=d1, weight=sym.sin(d2, name="s"), kernel=(2, 2),
                           num_filter=1, name="conv")
    p = _part(conv, "default", ["sin"])
    assert p.infer_shape() == ([(3, 3, 10, 10), (1, 3, 2, 2), (1,)], [(3, 1, 9, 9)], [])


def test_partitioned_json_round_trips():
    p = _part(g_bn(), "default", ["exp", "BatchNorm"])
    q = mx.sym.load_json(p.tojson())
    assert _summary(q) == BN
    assert q.list_auxiliary_states() == p.list_auxiliary_states()
    rng = np.random.RandomState(1)
    vals = {n: rng.uniform(0.1, 1, sh).astype("float32")
            for n, sh in zip(p.list_inputs(), [(2, 3, 4)] + [(3,)] * 8)}
    np.testing.assert_allclose(_run(q, vals, grad=False)[0][0],
                               _run(g_bn(), vals, grad=False)[0][0], rtol=1e-6)


def test_executor_partitions_under_mxnet_subgraph_backend(monkeypatch):
    s = g_cycle()
    check_call(_LIB.MXSetSubgraphPropertyOpNames(c_str("default"), mx_uint(3),
                                                 c_str_array(["exp", "sin", "elemwise_add"])))
    x = mx.nd.array([[0.5, 1.0]])
    plain = s.bind(mx.cpu(), {"data": x}).forward()[0].asnumpy()
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
    ex = s.bind(mx.cpu(), {"data": x})
    assert _summary(ex.get_optimized_symbol()) == CYCLE
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), plain, rtol=1e-6)
    assert ex.output_dict.keys() == {"add_output"}      # the bound symbol's names
    ex = s.simple_bind(mx.cpu(), data=(1, 2))
    assert json.loads(ex.get_optimized_symbol().tojson())["nodes"][1]["op"] == "_CachedOp"
    # without MXSetSubgraphPropertyOpNames' names nothing is grouped
    check_call(_LIB.MXRemoveSubgraphPropertyOpNames(c_str("default")))
    assert "_CachedOp" not in s.bind(mx.cpu(), {"data": x}).get_optimized_symbol().tojson()
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "NONE")
    assert "_CachedOp" not in s.bind(mx.cpu(), {"data": x}).get_optimized_symbol().tojson()
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "nosuch")
    with pytest.raises(GpundaError, match="'nosuch'"):
        s.bind(mx.cpu(), {"data": x})


def test_gluon_hybridize_with_a_backend_partitions_its_graph():
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(8, activation="relu"), mx.gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (4, 5)))
    want = net(x).asnumpy()
    _set_v2("default", ["FullyConnected"])
    net.hybridize(backend="default")
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    ops = [n["op"] for n in json.loads(net._cached_graph[1].tojson())["nodes"]]
    assert ops.count("_CachedOp") == 2 and "FullyConnected" not in ops
    # optimize_for builds the partitioned cache without running it
    net.hybridize(active=False)
    net.optimize_for(x, backend="default")
    assert net._cached_op is not None
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_bad_names_raise_naming_them():
    with pytest.raises(GpundaError, match="'nosuch'"):
        _set_v2("nosuch", ["exp"])
    with pytest.raises(GpundaError, match="'nosuch'"):
        _part(g_cycle(), "nosuch", ["exp"])
    with pytest.raises(GpundaError, match="'nosuch'"):
        g_cycle().optimize_for("nosuch")
    with pytest.raises(GpundaError, match="op_names"):   # MXNet: "Cannot find attribute"
        g_cycle().optimize_for("default")
    with pytest.raises(GpundaError, match="SymbolHandle"):
        _LIB.MXBuildSubgraphByOpNames(mx.nd.ones(1), c_str("default"), mx_uint(1),
                                      c_str_array(["exp"]), ctypes.byref(SymbolHandle()))
    with pytest.raises(GpundaError, match="Symbol"):
        Symbol(SymbolHandle(12345))


def test_cached_op_node_without_a_graph_says_so():
    with pytest.raises(GpundaError, match="_CachedOp"):
        sym._internal._CachedOp(sym.var("a")).list_outputs()
    from gpunda.ops.control_flow.subgraph import subgraph_symbol
    from gpunda.ops.registry import get_op
    with pytest.raises(GpundaError, match="_CachedOp: no subgraph"):
        subgraph_symbol(get_op("_CachedOp").parse_params({}))


def test_import_leaves_partitioning_unloaded():
    import subprocess
    import sys
    code = ("import sys, gpunda; "
            "print('gpunda._frontend.subgraph' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_base_exports_the_c_api_names():
    assert base.SymbolHandle is ctypes.c_void_p
