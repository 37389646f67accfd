"""Symbol creators' ``attr=`` values: MXNet 1.9.1 generated creators store ``str(value)``.

Numbers below were recorded from real MXNet 1.9.1 (/work/mxref), e.g.::

    x = mx.sym.var('x')
    mx.sym.relu(x, name='r', attr={'__t__': (1, 2), '__l__': [1, 2], '__f__': 1.5,
                                   '__n__': None, '__b__': True}).list_attr()
    -> {'__b__': 'True', '__n__': 'None', '__f__': '1.5', '__l__': '[1, 2]', '__t__': '(1, 2)'}
    mx.sym.Convolution(x, kernel=(3,3), num_filter=4, name='c',
                       attr={'__init__': mx.init.Xavier()}).list_attr()
    -> {'num_filter': '4', 'kernel': '(3, 3)', '__init__': '<mxnet.initializer.Xavier object ...>'}
    mx.sym.Convolution(x, kernel=(3,3), num_filter=4, attr={'num_filter': 8}).list_attr()
    -> {'kernel': '(3, 3)', 'num_filter': '8'}            (attr= wins over the keyword)
    mx.sym.var('w', attr={'a': 1})         -> ValueError: Set Attr only accepts string values
    mx.AttrScope(a=1)                      -> ValueError: Attributes need to be string
    x._set_attr(a=1)                       -> ValueError
    mx.sym.var('w', __foo__=3).list_attr() -> {'__foo__': '3'}
    mx.sym.Convolution(x, kernel=(3,3), num_filter=4, attr={'foo': [1, 2]})
    -> MXNetError: Cannot find argument 'foo'
"""
import json

import pytest

import gpunda as mx
from gpunda.base import MXNetError


def test_plain_values_are_stored_as_str():
    x = mx.sym.var('x')
    s = mx.sym.relu(x, name='r', attr={'__t__': (1, 2), '__l__': [1, 2], '__f__': 1.5,
                                       '__n__': None, '__b__': True, 'foo': 3})
    assert s.list_attr() == {'__b__': 'True', '__n__': 'None', '__f__': '1.5',
                             '__l__': '[1, 2]', '__t__': '(1, 2)', 'foo': '3'}
    assert mx.sym.relu(x, attr={'__a__': b'ab'}).list_attr() == {'__a__': "b'ab'"}


def test_initializer_object_in_attr_builds_conv_and_json():
    # GluonCV's SSD passes an Initializer object; MXNet stores str() of it. gpunda's
    # Initializer prints as its dumps() form (docs/compat.md), so that is what is stored.
    x = mx.sym.var('x')
    init = mx.init.Xavier()
    c = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, name='c', attr={'__init__': init})
    assert c.list_attr() == {'num_filter': '4', 'kernel': '(3, 3)', '__init__': str(init)}
    assert c.attr('__init__') == str(init)
    # the weight and bias variables inherit the op's attributes, as in MXNet
    ad = c.attr_dict()
    assert ad['c_weight']['__init__'] == str(init) and ad['c_bias']['__init__'] == str(init)
    nodes = json.loads(c.tojson())['nodes']
    assert [n.get('attrs', {}).get('__init__') for n in nodes] == [None] + [str(init)] * 3
    # and the graph still infers shapes and round-trips through JSON
    _, out, _ = c.infer_shape(x=(1, 2, 5, 5))
    assert out == [(1, 4, 3, 3)]
    assert mx.sym.load_json(c.tojson()).list_attr()['__init__'] == str(init)


def test_contrib_op_accepts_object_attr():
    x = mx.sym.var('x')
    s = mx.sym.contrib.box_nms(x, attr={'__init__': mx.init.Zero()})
    assert s.list_attr() == {'__init__': str(mx.init.Zero())}


def test_attr_wins_over_keyword_and_feeds_params():
    x = mx.sym.var('x')
    s = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, name='c', attr={'num_filter': 8})
    assert s.list_attr() == {'kernel': '(3, 3)', 'num_filter': '8'}
    s = mx.sym.Convolution(x, kernel=(3, 3), name='c', attr={'num_filter': 8})
    assert s.infer_shape(x=(1, 1, 4, 4))[1] == [(1, 8, 2, 2)]


def test_unknown_non_dunder_key_is_a_bad_param():
    x = mx.sym.var('x')
    with pytest.raises(MXNetError, match="foo"):
        mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, attr={'foo': [1, 2]})
    with pytest.raises(MXNetError, match="k"):
        mx.sym.random.uniform(shape=(2,), attr={'k': 1.5})


def test_var_scope_and_set_attr_still_need_strings():
    with pytest.raises(ValueError):
        mx.sym.var('w', attr={'a': 1})
    with pytest.raises(ValueError):
        mx.sym.Variable('w', attr={'__init__': mx.init.Zero()})
    with pytest.raises(ValueError):
        mx.AttrScope(a=1)
    with pytest.raises(ValueError):
        mx.sym.var('x')._set_attr(a=1)
    # keyword dunder attributes of var are str()-ed, as in MXNet
    assert mx.sym.var('w', __foo__=3).list_attr() == {'__foo__': '3'}
    with mx.AttrScope(a='1'):
        assert mx.sym.relu(mx.sym.var('x'), attr={'b': 2}).list_attr() == {'a': '1', 'b': '2'}
