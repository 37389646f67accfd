"""The registry and the dispatcher: params, output counting, out=, contexts, errors."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from gpunda._engine.imperative import invoke
from gpunda.ops.registry import OpDef, Param, register, get_op, all_ops

# A test op with 3 outputs of which 1 is visible (the BatchNorm pattern).
_THREE = register(OpDef(
    "_test_three_outputs",
    lambda xp, p, x: (x * p.scale, x + 1, x - 1),
    params=[Param("scale", "float", 2.0), Param("mode", "enum", "a", choices=("a", "b")),
            Param("kernel", "shape", (1, 1)), Param("flag", "bool", False),
            Param("axis", "axis", None), Param("dtype", "dtype", None),
            Param("count", "int", 1)],
    num_outputs=3, num_visible=1, nondiff=True, hidden=True,
    doc="Test op: x*scale, x+1, x-1 (one visible)."))


@pytest.mark.parametrize("given, expected", [
    ({"kernel": "(3, 3)"}, (3, 3)), ({"kernel": "[3,3]"}, (3, 3)), ({"kernel": (2, 4)}, (2, 4)),
    ({"kernel": "3"}, (3,)), ({"kernel": "(5,)"}, (5,)), ({"kernel": "()"}, ()),
])
def test_shape_params_parse_mxnet_strings(given, expected):
    assert _THREE.parse_params(given).kernel == expected


@pytest.mark.parametrize("name, value, expected", [
    ("flag", "True", True), ("flag", "False", False), ("flag", "1", True), ("flag", 0, False),
    ("scale", "1e-05", 1e-5), ("scale", "3", 3.0), ("count", "7", 7), ("count", 7.0, 7),
    ("axis", "None", None), ("axis", "(0, 1)", (0, 1)), ("axis", "-1", -1),
    ("dtype", "float16", np.dtype("float16")), ("dtype", "None", None),
    ("dtype", np.int32, np.dtype("int32")), ("mode", "b", "b"),
])
def test_scalar_params_parse(name, value, expected):
    assert getattr(_THREE.parse_params({name: value}), name) == expected


@pytest.mark.parametrize("kw, fragment", [
    ({"nope": 1}, "unknown parameter nope=1"),
    ({"scale": "abc"}, "scale='abc'"),
    ({"mode": "c"}, "['a', 'b']"),
    ({"kernel": "(a, b)"}, "kernel='(a, b)'"),
    ({"flag": "maybe"}, "flag='maybe'"),
    ({"count": 1.5}, "count=1.5"),
    ({"dtype": "float8"}, "float8"),
])
def test_invalid_params_name_op_param_and_value(kw, fragment):
    with pytest.raises(mx.GpundaError) as e:
        invoke(_THREE, [nd.ones((2,))], **kw)
    assert "_test_three_outputs" in str(e.value) and fragment in str(e.value)


def test_missing_required_param():
    with pytest.raises(mx.GpundaError, match="Operator clip: required parameter a_min is missing"):
        nd.clip(nd.ones((2,)), a_max=1.0)


def test_params_as_strings_through_nd_functions():
    a = nd.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(nd.clip(a, a_min="-1", a_max="1").asnumpy(), [-1, 0.5, 1])
    np.testing.assert_array_equal(nd.clip(a, -1, 1).asnumpy(), [-1, 0.5, 1])   # positional params
    assert nd.Cast(a, dtype="int32").dtype == np.int32


def test_output_counting_all_or_visible():
    x = nd.array([1.0, 2.0])
    vis = invoke(_THREE, [x])
    assert isinstance(vis, nd.NDArray)
    np.testing.assert_array_equal(vis.asnumpy(), [2, 4])
    o1 = nd.zeros((2,))
    assert invoke(_THREE, [x], out=o1) is o1
    np.testing.assert_array_equal(o1.asnumpy(), [2, 4])
    outs = [nd.zeros((2,)) for _ in range(3)]
    invoke(_THREE, [x], out=outs)
    assert [o.asnumpy().tolist() for o in outs] == [[2, 4], [2, 3], [0, 1]]
    with pytest.raises(mx.GpundaError, match="Operator _test_three_outputs expects 3 \\(all\\) or "
                                             "1 \\(visible only\\) outputs, but got 2 instead"):
        invoke(_THREE, [x], out=[nd.zeros((2,)), nd.zeros((2,))])


def test_out_aliasing_an_input():
    x = nd.array([1.0, 2.0])
    y = nd.exp(x, out=x)
    assert y is x
    np.testing.assert_allclose(x.asnumpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    a = nd.array([1.0, 2.0])
    nd.broadcast_add(a, a, out=a)
    assert a.asnumpy().tolist() == [2, 4]


def test_out_with_wrong_shape_leaves_it_untouched():
    x = nd.array([1.0, 2.0])
    o = nd.full((3,), 9.0)
    with pytest.raises(mx.GpundaError, match="out\\[0\\] has shape \\(3,\\)"):
        nd.exp(x, out=o)
    assert o.asnumpy().tolist() == [9, 9, 9]


def test_failed_call_does_not_modify_inputs():
    a = nd.array([[1.0, 2.0]])
    b = nd.array([1.0, 2.0, 3.0])
    before = (a.asnumpy().copy(), b.asnumpy().copy())
    with pytest.raises(mx.GpundaError):
        nd.elemwise_add(a, b)
    with pytest.raises(mx.GpundaError):
        nd.broadcast_add(a, b, out=a)
    np.testing.assert_array_equal(a.asnumpy(), before[0])
    np.testing.assert_array_equal(b.asnumpy(), before[1])


def test_outputs_live_on_the_inputs_context_and_report_stype():
    a = nd.ones((2,), ctx=mx.cpu(3))
    r = nd.exp(a)
    assert r.context == mx.cpu(3) and r.stype == "default"


def test_inputs_by_name():
    a, b = nd.array([1.0]), nd.array([2.0])
    assert nd.broadcast_sub(lhs=a, rhs=b).asnumpy().tolist() == [-1]
    with pytest.raises(mx.GpundaError, match="expects 2 inputs \\(lhs, rhs\\) but got 1"):
        nd.broadcast_sub(a)


def test_docstrings_list_params():
    doc = nd.clip.__doc__
    assert "a_min" in doc and "a_max" in doc and "required" in doc
    assert "Aliases" in nd.broadcast_add.__doc__ or nd.broadcast_add.__doc__


def test_registry_lookup():
    assert get_op("cast") is get_op("Cast")
    assert "exp" in all_ops()
    with pytest.raises(mx.GpundaError, match="unknown operator 'nope'"):
        get_op("nope")


def test_public_invoke_accepts_names_and_strings():
    r = invoke("_plus_scalar", [nd.array([1.0])], scalar="2.5")
    assert r.asnumpy().tolist() == [3.5]


def test_ops_without_params_ignore_keyword_arguments_as_mxnet():
    # MXNet parses attributes only for ops with a parameter struct (observed in 1.9.1:
    # nd.broadcast_maximum(a, b, axis=1) and nd.relu(a, foo=3) run)
    a = nd.array([1.0, -2.0])
    np.testing.assert_array_equal(nd.broadcast_maximum(a, nd.zeros((2,)), axis=1).asnumpy(),
                                  [1.0, 0.0])
    np.testing.assert_array_equal(nd.relu(a, foo=3).asnumpy(), [1.0, 0.0])
    with pytest.raises(mx.GpundaError, match="unknown parameter foo"):
        nd.sum(a, foo=3)
