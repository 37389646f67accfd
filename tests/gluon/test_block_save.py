"""Block.save / Block.load: MXNet 1.9.1's structure file (<prefix>-model.json) and params."""
import json

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError
from gpunda.gluon import nn


class _Chain(nn.Block):
    def add(self, block):
        self._children[block.name + str(len(self._children))] = block

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x


def _make():
    inner = _Chain()
    inner.add(nn.Dense(4))
    net = _Chain()
    net.add(inner)
    net.add(nn.Dense(3))
    return net


def test_save_writes_mxnet_structure_and_load_restores_outputs(tmp_path):
    net = _make()
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(0).rand(2, 5))
    out1 = net(x).asnumpy()
    prefix = str(tmp_path / "m")
    net.save(prefix)
    model = json.load(open(prefix + "-model.json"))
    # the layout MXNet 1.9.1 writes for this model (observed on MXNet): class name + walk
    # position as keys, the saved name, the child-name -> attribute map, cached graphs
    top = model["_chain0"]
    inner, dense = top["_chain1"], top["dense3"]
    assert top["children"] == {inner["orig_name"]: inner["orig_name"] + "0",
                               dense["orig_name"]: dense["orig_name"] + "1"}
    d = inner["dense2"]
    assert d["hybridized"] is True and d["in_format"] == [0] and d["out_format"] == 0
    nodes = json.loads(d["symbol"])["nodes"]
    assert [n["op"] for n in nodes] == ["null", "null", "null", "FullyConnected"]
    assert "hybridized" not in top      # a plain Block has no graph entry
    net2 = _make()                      # new names (dense4, dense5): load renames them
    net2.load(prefix)
    np.testing.assert_allclose(net2(x).asnumpy(), out1, rtol=1e-6)
    assert list(net2._children) == list(net._children)


def test_load_into_a_different_model_names_the_block(tmp_path):
    net = _make()
    net.initialize()
    net(mx.nd.ones((1, 5)))
    net.save(str(tmp_path / "m"))
    other = _Chain()
    other.add(nn.Dense(3))
    with pytest.raises(GpundaError, match="Dense"):
        other.load(str(tmp_path / "m"))
