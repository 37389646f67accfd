"""Helpers for the mx.np function tests: arrays from official NumPy values, and a
central finite-difference check of ``autograd`` gradients (float64)."""
import numpy as onp

import gpunda as mx
from gpunda import autograd as ag
from gpunda import numpy as np


def mxa(values, dtype=None):
    """An ``mx.np.ndarray`` with the values (and dtype) of an official NumPy array."""
    v = onp.asarray(values)
    return np.array(v, dtype=dtype or v.dtype)


def check_grad(f, *values, eps=1e-6, rtol=1e-4, atol=1e-6, seed=0):
    """``d sum(f(*xs) * h) / d xs`` from autograd against central differences."""
    rng = onp.random.RandomState(seed)
    xs = [mxa(onp.asarray(v, dtype=onp.float64)) for v in values]
    for x in xs:
        x.attach_grad()
    with ag.record():
        out = f(*xs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    heads = [rng.uniform(0.5, 1.5, o.shape) for o in outs]
    with ag.record():
        out = f(*xs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        total = sum((o * mxa(h)).sum() for o, h in zip(outs, heads))
    total.backward()

    def scalar(vals):
        r = f(*[mxa(v) for v in vals])
        rs = r if isinstance(r, (list, tuple)) else [r]
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(rs, heads))

    base = [onp.asarray(v, dtype=onp.float64) for v in values]
    for k, x in enumerate(xs):
        num = onp.zeros_like(base[k])
        for idx in onp.ndindex(base[k].shape):
            plus = [b.copy() for b in base]
            minus = [b.copy() for b in base]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            num[idx] = (scalar(plus) - scalar(minus)) / (2 * eps)
        onp.testing.assert_allclose(x.grad.asnumpy(), num, rtol=rtol, atol=atol)
