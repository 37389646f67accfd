"""Hypothesis: NDArray arithmetic broadcasts exactly like NumPy, and refuses what NumPy refuses."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import gpunda as mx
from gpunda import nd

OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "maximum": np.maximum}


@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       op=st.sampled_from(sorted(OPS)), seed=st.integers(0, 2 ** 16))
def test_broadcasting_matches_numpy(shapes, op, seed):
    sa, sb = shapes.input_shapes
    if sa == () or sb == ():
        sa, sb = sa or (1,), sb or (1,)     # MXNet legacy arrays have at least one dim
    r = np.random.default_rng(seed)
    a = r.standard_normal(sa).astype(np.float32)
    b = r.standard_normal(sb).astype(np.float32)
    if op == "maximum":
        got = nd.broadcast_maximum(nd.array(a), nd.array(b)).asnumpy()
    else:
        got = eval(f"x {op} y", {"x": nd.array(a), "y": nd.array(b)}).asnumpy()
    np.testing.assert_allclose(got, OPS[op](a, b), rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(sa=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
       sb=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))
def test_incompatible_shapes_raise_naming_both(sa, sb):
    try:
        np.broadcast_shapes(sa, sb)
        compatible = True
    except ValueError:
        compatible = False
    x, y = nd.zeros(sa), nd.ones(sb)
    if compatible:
        assert (x + y).shape == np.broadcast_shapes(sa, sb)
    else:
        with pytest.raises(mx.GpundaError) as e:
            x + y
        assert str(sa) in str(e.value) and str(sb) in str(e.value)
        assert x.asnumpy().sum() == 0 and y.asnumpy().sum() == np.prod(sb)
