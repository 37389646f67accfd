"""mx.visualization / mx.viz: print_summary against MXNet 1.9.1's printed table, and
plot_network (needs the optional graphviz package)."""
import sys

import pytest

import gpunda as mx

# printed by MXNet 1.9.1 for _net() with shape={'data': (2, 5), 'extra': (2, 2)},
# line_length=60
MXNET_TABLE = '____________________________________________________________\nLayer (type)              Output ShapeParam Previous Layer  \n============================================================\ndata(null)                5           0                     \n____________________________________________________________\nfc1(FullyConnected)       4           24    data            \n____________________________________________________________\nrelu1(Activation)         4           0     fc1             \n____________________________________________________________\ncat(Concat)               6           0     relu1           \n____________________________________________________________\nfc2(FullyConnected)       3           21    cat             \n============================================================\nTotal params: 45\n____________________________________________________________\n'

# MXNet 1.9.1's plot_network(_net(), shape=...) .source, with graphviz 0.21
MXNET_DOT = 'digraph plot {\n\tdata [label=data fillcolor="#8dd3c7" fixedsize=true height=0.8034 shape=oval style=filled width=1.3]\n\tfc1 [label="FullyConnected\n4" fillcolor="#fb8072" fixedsize=true height=0.8034 shape=box style=filled width=1.3]\n\trelu1 [label="Activation\nrelu" fillcolor="#ffffb3" fixedsize=true height=0.8034 shape=box style=filled width=1.3]\n\textra [label=extra fillcolor="#8dd3c7" fixedsize=true height=0.8034 shape=oval style=filled width=1.3]\n\tcat [label=cat fillcolor="#fdb462" fixedsize=true height=0.8034 shape=box style=filled width=1.3]\n\tfc2 [label="FullyConnected\n3" fillcolor="#fb8072" fixedsize=true height=0.8034 shape=box style=filled width=1.3]\n\tfc1 -> data [label=5 arrowtail=open dir=back]\n\trelu1 -> fc1 [label=4 arrowtail=open dir=back]\n\tcat -> relu1 [label=4 arrowtail=open dir=back]\n\tcat -> extra [label=2 arrowtail=open dir=back]\n\tfc2 -> cat [label=6 arrowtail=open dir=back]\n}\n'


def _net():
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, name="fc1", num_hidden=4)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.Concat(net, mx.sym.Variable("extra"), name="cat")
    return mx.sym.FullyConnected(data=net, name="fc2", num_hidden=3)


def test_print_summary_matches_mxnet(capsys):
    assert mx.viz is mx.visualization
    mx.viz.print_summary(_net(), shape={"data": (2, 5), "extra": (2, 2)}, line_length=60)
    assert capsys.readouterr().out == MXNET_TABLE


def test_print_summary_bad_input():
    with pytest.raises(TypeError, match="Symbol"):
        mx.viz.print_summary(mx.nd.ones(2))
    with pytest.raises(ValueError, match="incomplete"):
        mx.viz.print_summary(_net(), shape={"data": (2, 5)})


def test_plot_network_without_graphviz_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match="graphviz"):
        mx.viz.plot_network(_net())


def test_plot_network_builds_the_digraph():
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(_net(), shape={"data": (2, 5), "extra": (2, 2)})
    assert dot.source == MXNET_DOT


class _FakeDigraph:
    """Records what plot_network draws (stands in for graphviz.Digraph)."""

    def __init__(self, name, format):
        self.name, self.format, self.nodes, self.edges = name, format, {}, []

    def node(self, name, label, **attr):
        self.nodes[name] = (label, attr)

    def edge(self, tail_name, head_name, **attr):
        self.edges.append((tail_name, head_name, attr["label"]))


def test_plot_network_nodes_edges_and_labels(monkeypatch):
    fake = type(sys)("graphviz")
    fake.Digraph = _FakeDigraph
    monkeypatch.setitem(sys.modules, "graphviz", fake)
    dot = mx.viz.plot_network(_net(), title="t", shape={"data": (2, 5), "extra": (2, 2)},
                              dtype={"data": "float32", "extra": "float32"})
    assert dot.name == "t" and dot.format == "pdf"
    assert set(dot.nodes) == {"data", "fc1", "relu1", "extra", "cat", "fc2"}
    assert dot.nodes["fc1"][0] == "FullyConnected\n4"
    assert dot.nodes["relu1"][0] == "Activation\nrelu"
    assert dot.nodes["data"][1]["shape"] == "oval"
    assert ("relu1", "fc1", "4(float32)") in dot.edges
    assert ("cat", "extra", "2(float32)") in dot.edges
    shown = mx.viz.plot_network(_net(), hide_weights=False)
    assert "fc1_weight" not in shown.nodes      # not drawn, but its edge is kept
    assert ("fc1", "fc1_weight", "") in shown.edges
