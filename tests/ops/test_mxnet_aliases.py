"""MXNet 1.9.1's other op names (gpunda/ops/_mxnet_aliases.py): reachable in nd, sym and the
JSON loader, naming the same op. Expected values recorded from MXNet 1.9.1."""
import json

import numpy as np

import gpunda as mx
from gpunda import nd, sym
from gpunda.ops import _mxnet_aliases
from gpunda.ops.registry import get_op


def test_every_alias_names_its_op():
    for name, aliases in _mxnet_aliases._ALIASES.items():
        for a in aliases:
            assert get_op(a) is get_op(name), a
    # a few MXNet pairs, as its registry has them (NNGetOpHandle(alias) is the op)
    for alias, name in [("_Plus", "elemwise_add"), ("_Greater_Equal", "_greater_equal"),
                        ("_npi_cast", "Cast"), ("_npx_fully_connected", "FullyConnected"),
                        ("_sparse_stop_gradient", "BlockGrad"), ("cumsum", "_np_cumsum"),
                        ("_np_amax", "_np_max"), ("_npi_reshape", "_npx_reshape")]:
        assert get_op(alias) is get_op(name), alias


def test_cumsum_in_nd_and_sym():
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    assert nd.cumsum(x, axis=1).asnumpy().tolist() == [[1, 3, 6], [4, 9, 15]]
    assert nd.cumsum(nd.array([[1, 2], [3, 4]])).asnumpy().tolist() == [1, 3, 6, 10]
    assert nd.op.cumsum is not None and sym.op.cumsum is not None
    s = sym.cumsum(sym.var("x"), axis=1)
    assert s.name == "cumsum0"
    assert json.loads(s.tojson())["nodes"][-1]["op"] == "_np_cumsum"     # the canonical name
    out = s.eval(x=x)[0]
    assert out.asnumpy().tolist() == [[1, 3, 6], [4, 9, 15]]
    assert not hasattr(nd.NDArray, "cumsum")        # as MXNet's legacy NDArray


def _one_node_json(op, attrs, nin):
    nodes = [{"op": "null", "name": f"a{i}", "inputs": []} for i in range(nin)]
    nodes.append({"op": op, "name": "y", "attrs": attrs, "inputs": [[i, 0, 0] for i in range(nin)]})
    return json.dumps({"nodes": nodes, "arg_nodes": list(range(nin)),
                       "node_row_ptr": list(range(nin + 2)), "heads": [[nin, 0, 0]],
                       "attrs": {"mxnet_version": ["int", 10901]}})


def test_aliases_load_from_json():
    a = nd.array([[1.0, -2.0], [3.0, 4.0]])
    b = nd.array([[2.0, 2.0], [2.0, 2.0]])
    for op, attrs, args, want in [
            ("_Plus", {}, [a, b], [[3, 0], [5, 6]]),
            ("_Greater_Equal", {}, [a, b], [[0, 0], [1, 1]]),
            ("_MulScalar", {"scalar": "2"}, [a], [[2, -4], [6, 8]]),
            ("_npx_activation", {"act_type": "relu"}, [a], [[1, 0], [3, 4]]),
            ("_sparse_abs", {}, [a], [[1, 2], [3, 4]]),
            ("_np_copy", {}, [a], [[1, -2], [3, 4]]),
            ("_npx_relu", {}, [a], [[1, 0], [3, 4]]),
            ("_npx_sigmoid", {}, [b], [[0.880797, 0.880797], [0.880797, 0.880797]])]:
        s = sym.load_json(_one_node_json(op, attrs, len(args)))
        got = s.eval(**{f"a{i}": v for i, v in enumerate(args)})[0].asnumpy()
        np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-6, err_msg=op)


def test_sparse_namespace_names_nodes_by_the_short_name():
    assert sym.sparse.abs(sym.var("x")).name == "abs0"      # MXNet 1.9.1: abs0


def test_legacy_arithmetic_names_are_the_elemwise_ops():
    # MXNet 1.9.1: NNGetOpHandle("_plus") is elemwise_add's handle (not broadcast_add's), so
    # unequal shapes are refused and csr + csr stays csr; choose_element_0index is pick
    for alias, name in [("_plus", "elemwise_add"), ("_add", "elemwise_add"),
                        ("_minus", "elemwise_sub"), ("_sub", "elemwise_sub"),
                        ("_mul", "elemwise_mul"), ("_div", "elemwise_div"),
                        ("choose_element_0index", "pick")]:
        assert get_op(alias) is get_op(name), alias
    a, b = nd.ones((2, 3)), nd.ones((1, 3))
    try:
        nd._internal._plus(a, b)
    except mx.base.MXNetError as e:
        assert "(2, 3)" in str(e) and "(1, 3)" in str(e)
    else:
        raise AssertionError("_plus broadcast unequal shapes")
    node = json.loads(sym._internal._add(sym.var("a"), sym.var("b")).tojson())["nodes"][-1]
    assert node["op"] == "elemwise_add"
    c = nd._internal._plus(a.tostype("csr"), a.tostype("csr"))
    assert c.stype == "csr" and c.asnumpy().tolist() == [[2, 2, 2], [2, 2, 2]]
    got = nd.choose_element_0index(nd.array([[1, 2, 3], [4, 5, 6]]), nd.array([0, 2]))
    assert got.asnumpy().tolist() == [1, 6]
