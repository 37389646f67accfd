"""Random samplers: distributions, shapes, dtypes and per-context reproducibility."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd


def test_uniform_normal_randint_shapes_and_ranges():
    mx.random.seed(42)
    u = mx.random.uniform(-2, 3, shape=(2000,))
    assert u.shape == (2000,) and u.dtype == np.float32
    a = u.asnumpy()
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.15
    n = mx.random.normal(1.0, 2.0, shape=(50, 40), dtype="float64").asnumpy()
    assert n.dtype == np.float64 and abs(n.mean() - 1) < 0.2 and abs(n.std() - 2) < 0.2
    r = mx.random.randint(3, 7, shape=(500,)).asnumpy()
    assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6}
    assert nd.random.uniform(shape=(3,)).shape == (3,)
    assert nd.random_normal(shape=(2, 2)).shape == (2, 2)


def test_seed_is_reproducible_per_context():
    mx.random.seed(7)
    a = mx.random.uniform(shape=(5,)).asnumpy()
    b = mx.random.uniform(shape=(5,)).asnumpy()
    mx.random.seed(7)
    assert (mx.random.uniform(shape=(5,)).asnumpy() == a).all()
    assert not (a == b).all()
    mx.random.seed(7, ctx=mx.cpu(1))
    c = mx.random.uniform(shape=(5,), ctx=mx.cpu(1)).asnumpy()
    d = mx.random.uniform(shape=(5,)).asnumpy()             # cpu(0) stream unaffected
    assert (d == b).all()
    mx.random.seed(7, ctx=mx.cpu(1))
    assert (mx.random.uniform(shape=(5,), ctx=mx.cpu(1)).asnumpy() == c).all()


def test_shuffle_permutes_rows():
    mx.random.seed(3)
    x = nd.array(np.arange(20).reshape(10, 2))
    y = mx.random.shuffle(x).asnumpy()
    assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.asnumpy().tolist()))
    assert (y != x.asnumpy()).any()
    assert x.asnumpy()[0].tolist() == [0, 1]          # input untouched


def test_out_argument():
    o = nd.zeros((4,))
    r = mx.random.uniform(0, 1, out=o)
    assert r is o and (o.asnumpy() > 0).any()


@pytest.mark.parametrize("call, frag", [
    (lambda: mx.random.uniform(2, 1, shape=(2,)), "low=2.0 must be <= high=1.0"),
    (lambda: mx.random.normal(0, -1, shape=(2,)), "scale=-1.0"),
    (lambda: mx.random.randint(5, 5, shape=(2,)), "low=5 must be < high=5"),
    (lambda: mx.random.uniform(shape=(-1, 2)), "shape"),
    (lambda: mx.random.seed("x"), "seed_state='x'"),
])
def test_bad_input(call, frag):
    # sampler parameters are checked in the kernel, so (as in MXNet) the error may
    # surface at the first read of the result instead of at the call
    with pytest.raises(mx.GpundaError, match=frag.replace("(", r"\(").replace(")", r"\)")):
        call().asnumpy()
