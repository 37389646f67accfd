"""Symbol surface as MXNet 1.9.1 has it: operator names, attributes, NDArray-only
methods, sub-namespaces (gpunda/symbol/symbol.py, namespaces.py, base.py)."""
import copy
import json
import pickle

import numpy as np
import pytest

import gpunda as mx
from gpunda import sym
from gpunda.base import GpundaError, NotImplementedForSymbol


def _op(s):
    return json.loads(s.tojson())["nodes"][-1]["op"]


def test_operator_names_follow_mxnet():
    a, b = sym.var("a"), sym.var("b")
    with mx.name.NameManager():
        # MXNet 1.9.1's observed names and operators
        cases = [(a + b, "_plus0", "elemwise_add"), (a - b, "_minus0", "elemwise_sub"),
                 (a * b, "_mul0", "elemwise_mul"), (a / b, "_div0", "elemwise_div"),
                 (a + 1, "_plusscalar0", "_plus_scalar"),
                 (1 - a, "_rminusscalar0", "_rminus_scalar"),
                 (-a, "_mulscalar0", "_mul_scalar"), (abs(a), "abs0", "abs"),
                 (2 ** a, "_rpower_scalar0", "_rpower_scalar"),
                 (a / 2, "_divscalar0", "_div_scalar")]
        for s, name, op in cases:
            assert (s.name, _op(s)) == (name, op)
    with mx.name.NameManager():
        assert (a == b).name == "_equal0" and (a > 1).name == "_greater_scalar0"
        assert sym.maximum(a, b).name == "_maximum0"
        assert sym.maximum(a, 2).name == "_maximum_scalar0"
    assert sym.maximum(3, 2) == 3 and sym.power(2, 3) == 8


def test_ndarray_only_operations_raise_mxnets_error():
    x = sym.var("x")
    with pytest.raises(NotImplementedForSymbol) as e:
        bool(x)
    assert str(e.value) == ("Function __bool__ (namely operator \"bool\") is not implemented "
                            "for Symbol and only available in NDArray.")
    assert isinstance(e.value, GpundaError)
    with pytest.raises(NotImplementedForSymbol, match=r'"\+=".*with arguments'):
        y = x
        y += x
    for meth in ("asnumpy", "wait_to_read", "detach", "backward", "copy"):
        with pytest.raises(NotImplementedForSymbol, match=meth):
            getattr(x, meth)()
    assert copy.deepcopy(x).tojson() == x.tojson()


def test_hidden_attribute_keys_and_op_attributes():
    with mx.AttrScope(group="4", data="great"):
        v = sym.Variable("data", attr={"dtype": "data", "group": "1",
                                       "force_mirroring": "True"}, lr_mult=1)
    assert v.attr("group") == "1" and v.attr("dtype") == "data"
    assert v.attr("lr_mult") == v.attr("__lr_mult__") == "1"
    assert v.attr("force_mirroring") == v.attr("__force_mirroring__") == "True"
    assert pickle.loads(pickle.dumps(v)).list_attr() == v.list_attr()
    conv = sym.Convolution(data=v, name="conv", kernel=(1, 1), num_filter=1,
                           attr={"__mood__": "so so", "wd_mult": "x"}, lr_mult=1)
    d = conv.attr_dict()
    # MXNet stores __x__ keys on the node and its generated inputs, listing hidden
    # keys in both spellings; they never reach the op's parameters
    assert d["conv"]["lr_mult"] == d["conv"]["__lr_mult__"] == "1"
    assert d["conv_weight"]["__mood__"] == "so so" and d["conv"]["__wd_mult__"] == "x"
    node = json.loads(conv.tojson())["nodes"][-1]["attrs"]
    assert "lr_mult" not in node and node["__lr_mult__"] == "1"
    with pytest.raises(GpundaError, match="unknown parameter mood"):
        sym.Convolution(data=v, kernel=(1, 1), num_filter=1, attr={"mood": "x"})
    with pytest.raises(GpundaError, match="deprecated"):
        sym.FullyConnected(data=v, num_hidden=2, weight_lr_mult=1)
    # an op without parameters keeps plain attributes (MXNet parses none for it)
    assert sym.exp(v, name="e", attr={"mood": "ok"}).attr("mood") == "ok"
    with pytest.raises(ValueError):
        with mx.AttrScope(group=4):
            pass


def test_sub_namespaces_reach_the_registry_ops():
    a, b = sym.var("a"), sym.var("b")
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    y = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    out = sym.linalg.gemm2(a, b).eval(a=mx.nd.array(x), b=mx.nd.array(y))[0]
    np.testing.assert_allclose(out.asnumpy(), x @ y, rtol=1e-6)
    assert sym.sparse.dot is not None and sym.sparse.elemwise_add is not None
    assert sym.random.uniform(0, 1, shape=(2, 5)).infer_shape()[1] == [(2, 5)]
    u = sym.random.uniform(2, 3, shape=(50,)).eval()[0].asnumpy()
    assert u.shape == (50,) and u.min() >= 2 and u.max() < 3
    # Symbol parameters give MXNet's per-row samplers (_sample_uniform)
    rows = sym.random.uniform(a, b, shape=(3,))
    assert rows.infer_shape(a=(2,), b=(2,))[1] == [(2, 3)]
    r = rows.eval(a=mx.nd.array([0, 10]), b=mx.nd.array([1, 11]))[0].asnumpy()
    assert (r[0] >= 0).all() and (r[0] < 1).all() and (r[1] >= 10).all() and (r[1] < 11).all()
    import gpunda.symbol.linalg  # noqa: F401  (importable by path, as in MXNet)
    assert mx.nd.CachedOp is mx.CachedOp


def test_gen_atomic_symbol_keeps_the_operator_and_frees_its_inputs():
    x = sym.var("x")
    s = sym.SliceChannel(sym.exp(x), num_outputs=2, axis=1, name="sl")
    atom = s._gen_atomic_symbol()
    assert atom.list_arguments() == ["data"] and atom.list_outputs() == s.list_outputs()
    v = np.arange(4.0, dtype=np.float32).reshape(1, 4)
    outs = atom.eval(data=mx.nd.array(v))
    np.testing.assert_array_equal(outs[1].asnumpy(), v[:, 2:])


def test_name_manager_and_attr_scope_as_mxnet():
    with mx.name.NameManager() as nm:
        # the hint is used as given; MXNet's callers lower-case operator names
        assert nm.get(None, "FullyConnected") == "FullyConnected0"
        assert nm.get("given", "x") == "given"
        assert sym.FullyConnected(sym.var("d"), num_hidden=2).name == "fullyconnected0"
        with pytest.warns(DeprecationWarning):
            assert mx.name.NameManager.current is nm
    with mx.name.Prefix("net_"):
        assert sym.exp(sym.var("d"), name="e").name == "net_e"
    with mx.AttrScope(ctx_group="dev1") as scope:
        with pytest.warns(DeprecationWarning):
            assert mx.AttrScope.current.get(None) == {"ctx_group": "dev1"}
        v = sym.var("v")
    assert scope is not None and v.attr("ctx_group") == "dev1"
    assert v.list_attr()["__ctx_group__"] == "dev1"


def test_softmin_and_split_v2_fluent_methods_match_nd():
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    s = sym.var("x")
    got = s.softmin(axis=1).eval(x=mx.nd.array(x))[0].asnumpy()
    e = np.exp(-x - (-x).max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    parts = s.split_v2((2, 5), axis=1).eval(x=mx.nd.array(x))
    for p, ref in zip(parts, np.split(x, (2, 5), axis=1)):
        np.testing.assert_array_equal(p.asnumpy(), ref)


def test_namespace_ops_name_their_nodes_as_mxnet():
    """MXNet 1.9.1 names a node of sym.contrib/linalg/image by the short op name (its
    auto-made weights too, so MXNet-trained .params load); sym.random keeps the prefix."""
    with mx.name.NameManager():        # counters from zero, as in a fresh process
        _check_namespace_names()


def _check_namespace_names():
    d = mx.sym.var("d")
    assert mx.sym.contrib.box_nms(d).name == "box_nms0"
    assert mx.sym.contrib.ROIAlign(d, d, pooled_size=(2, 2), spatial_scale=1.0).name \
        == "roialign0"
    assert mx.sym.linalg.gemm2(d, d).name == "gemm20"
    assert mx.sym.image.to_tensor(d).name == "to_tensor0"
    assert mx.sym.random.uniform().name == "_random_uniform0"
    assert mx.sym.contrib.DeformableConvolution(d, d, kernel=(3, 3), num_filter=2) \
        .list_arguments() == ["d", "deformableconvolution0_weight", "deformableconvolution0_bias"]
    assert mx.sym.sparse.FullyConnected(d, num_hidden=2).list_arguments() \
        == ["d", "fullyconnected0_weight", "fullyconnected0_bias"]
