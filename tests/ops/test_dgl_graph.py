"""csr graph ops of ops/contrib/dgl_graph.py against MXNet 1.9.1's outputs and a dense reference."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd
G = [[1, 0, 0, 2], [3, 0, 4, 0], [0, 5, 0, 0], [0, 6, 7, 0]]


def _graph(dtype=np.int64):
    return nd.array(G, dtype=dtype).tostype("csr")


def test_edge_id_matches_mxnet_and_dense_lookup():
    u, v = [0, 0, 1, 1, 2, 3], [0, 1, 0, 2, 1, 3]
    e = nd.contrib.edge_id(_graph(np.float32), nd.array(u), nd.array(v))
    np.testing.assert_array_equal(e.asnumpy(), [1, -1, 3, 4, 5, -1])     # MXNet 1.9.1
    rs = np.random.RandomState(0)
    dense = rs.randint(1, 9, (6, 7)) * (rs.rand(6, 7) < 0.4)
    uu, vv = rs.randint(0, 6, 20), rs.randint(0, 7, 20)
    got = nd.contrib.edge_id(nd.array(dense).tostype("csr"), nd.array(uu), nd.array(vv))
    np.testing.assert_array_equal(got.asnumpy(), np.where(dense[uu, vv] != 0, dense[uu, vv], -1))
    with pytest.raises(GpundaError, match="must be a csr"):
        nd.contrib.edge_id(nd.array(G), nd.array([0]), nd.array([0]))


def test_dgl_adjacency_keeps_structure_with_float_ones():
    a = nd.contrib.dgl_adjacency(_graph())
    assert a.stype == "csr" and a.dtype == np.float32
    np.testing.assert_array_equal(a.asnumpy(), (np.array(G) != 0).astype(np.float32))
    with pytest.raises(GpundaError, match="int64"):
        nd.contrib.dgl_adjacency(_graph(np.float32))


def test_dgl_subgraph_matches_mxnet():
    o = nd.contrib.dgl_subgraph(_graph(), nd.array([0, 1, 2], dtype=np.int64),
                                nd.array([1, 3], dtype=np.int64), return_mapping=True)
    want = [[[0, 0, 0], [1, 0, 2], [0, 3, 0]], [[0, 0], [0, 0]],     # MXNet 1.9.1
            [[1, 0, 0], [3, 0, 4], [0, 5, 0]], [[0, 0], [6, 0]]]
    assert len(o) == 4
    for a, w in zip(o, want):
        assert a.stype == "csr" and a.dtype == np.int64
        np.testing.assert_array_equal(a.asnumpy(), w)
    np.testing.assert_array_equal(o[1].indices.asnumpy(), [0])      # edge id 0 is stored
    one = nd.contrib.dgl_subgraph(_graph(), nd.array([0, 2, 3], dtype=np.int64),
                                  return_mapping=False)
    np.testing.assert_array_equal(one.asnumpy(), [[0, 0, 1], [0, 0, 0], [0, 2, 0]])
    with pytest.raises(GpundaError, match="sorted"):
        nd.contrib.dgl_subgraph(_graph(), nd.array([2, 0], dtype=np.int64),
                                return_mapping=False)
