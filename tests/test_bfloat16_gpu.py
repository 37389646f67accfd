"""bfloat16 on the test stand-in GPU (CuPy 14's rules): arrays of ml_dtypes' bfloat16 live on
gpu(0), CuPy's ufuncs that have a bfloat16 loop take them and the others refuse them, and
gpunda's ops on gpu(0) give the CPU's bfloat16 results bit for bit (both compute in float32
and round, NOTE [bfloat16 compute] in gpunda/ops/_bf16.py). tests/test_bfloat16.py runs
whole under ``--standin-gpu`` too (its arrays then default to gpu(0)).
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda._core import bf16


def test_standin_takes_bfloat16_where_cupy_14_does(standin_gpu):
    xp = standin_gpu
    bt = bf16.dtype()
    h = np.array([1.5, -2.25, 3.0], dtype=bt)
    a = xp.asarray(h)
    assert a.dtype == bt
    assert a.astype(np.float32).get().tolist() == [1.5, -2.25, 3.0]
    np.testing.assert_array_equal(xp.add(a, a).get(), (h.astype(np.float32) * 2).astype(bt))
    assert xp.isfinite(a).get().all()
    with pytest.raises(TypeError, match="bitwise_and"):
        xp.bitwise_and(a, a)        # no bfloat16 loop in CuPy 14
    with pytest.raises(ValueError, match="Unsupported dtype"):
        xp.asarray(np.zeros(2, dtype=[("a", np.uint16)]))   # other void dtypes: still refused


OPS = [
    ("add", lambda a, b: a + b),
    ("mul", lambda a, b: a * b),
    ("exp", lambda a, b: mx.nd.exp(a)),
    ("dot", lambda a, b: mx.nd.dot(a, b.T)),
    ("sum", lambda a, b: mx.nd.sum(a, axis=1)),
    ("softmax", lambda a, b: mx.nd.softmax(a)),
    ("relu", lambda a, b: mx.nd.relu(a)),
    ("concat", lambda a, b: mx.nd.concat(a, b, dim=0)),
    ("transpose", lambda a, b: mx.nd.transpose(a)),
    ("cast", lambda a, b: a.astype("float32")),
    ("FullyConnected", lambda a, b: mx.nd.FullyConnected(a, b, num_hidden=6, no_bias=True)),
]


@pytest.mark.parametrize("name,f", OPS, ids=[o[0] for o in OPS])
def test_bfloat16_ops_on_gpu_equal_cpu(standin_gpu, name, f):
    r = np.random.default_rng(7)
    x, y = r.standard_normal((6, 40)), r.standard_normal((6, 40))

    def run(ctx):
        a = mx.nd.array(x, dtype="bfloat16", ctx=ctx)
        b = mx.nd.array(y, dtype="bfloat16", ctx=ctx)
        out = f(a, b)
        assert out.context == ctx
        return out.asnumpy()
    ref, got = run(mx.cpu()), run(mx.gpu(0))
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got.view(np.uint16) if got.dtype.kind == "V" else got,
                                  ref.view(np.uint16) if ref.dtype.kind == "V" else ref)
    # and the result is the float32 computation rounded (not a bfloat16 accumulation)
    if name == "sum":
        want = x.astype(bf16.dtype()).astype(np.float32).sum(axis=1, dtype=np.float32)
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=2 ** -8)


def test_bfloat16_autograd_on_gpu_equals_cpu(standin_gpu):
    r = np.random.default_rng(8)
    x = r.standard_normal((4, 5))

    def run(ctx):
        a = mx.nd.array(x, dtype="bfloat16", ctx=ctx)
        a.attach_grad()
        with mx.autograd.record():
            y = (mx.nd.tanh(a) * a).sum()
        y.backward()
        return a.grad.asnumpy()
    ref, got = run(mx.cpu()), run(mx.gpu(0))
    assert got.dtype == bf16.dtype()
    np.testing.assert_array_equal(got.view(np.uint16), ref.view(np.uint16))
