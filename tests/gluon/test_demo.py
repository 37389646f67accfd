"""The demo's pieces (the full run is too long for the test suite; see bench/bench_mlp.py)."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import demo, nd
from gpunda.base import GpundaError


def test_shipped_digits_split_is_fixed_and_disjoint():
    x_tr, y_tr, x_te, y_te = demo.load_digits(seed=0)
    assert x_tr.shape == (1438, 1, 8, 8) and x_te.shape == (359, 1, 8, 8)
    assert x_tr.dtype == np.float32 and 0.0 <= x_tr.min() and x_tr.max() == 1.0
    assert sorted(np.unique(np.concatenate([y_tr, y_te]))) == list(range(10))
    again = demo.load_digits(seed=0)
    np.testing.assert_array_equal(again[3], y_te)
    # no test image is also a training image (by index: the split is a permutation)
    with np.load(demo._DATA) as f:
        assert f["images"].shape == (1797, 8, 8) and f["images"].dtype == np.uint8
        assert np.bincount(f["labels"]).tolist()[:3] == [178, 182, 177]


def test_demo_model_forward_shape_and_names():
    net = demo.build_model()
    net.initialize(ctx=mx.cpu())
    y = net(nd.zeros((3, 1, 8, 8), ctx=mx.cpu()))
    assert y.shape == (3, 10)
    names = list(net.collect_params())
    assert names[0] == "digits_conv0_weight" and names[-1] == "digits_dense0_bias"


def test_demo_rejects_bad_flags():
    with pytest.raises(GpundaError, match="unknown type 'dist_snyc'"):
        demo.main(["--kvstore", "dist_snyc", "--device", "cpu"])
    with pytest.raises(GpundaError, match="--device"):
        demo.main(["--device", "tpu"])
