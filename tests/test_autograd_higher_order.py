"""Higher-order gradients through ``grad(create_graph=True)``.

References: closed-form NumPy derivatives for the unary ops (first, second
and third), and for compositions central finite differences of the
first-order gradient (itself checked against closed forms in test_autograd).
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda.ops.registry import all_names

nd = mx.nd


def _var(a):
    x = nd.array(np.asarray(a, dtype=np.float64), dtype="float64")
    x.attach_grad()
    return x


def _sig(x):
    return 1 / (1 + np.exp(-x))


# name: (domain, f', f'', f''')
UNARY = {
    "tanh": ((-1.5, 1.5), lambda x: 1 - np.tanh(x) ** 2,
             lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
             lambda x: (6 * np.tanh(x) ** 2 - 2) * (1 - np.tanh(x) ** 2)),
    "sigmoid": ((-2, 2), lambda x: _sig(x) * (1 - _sig(x)),
                lambda x: _sig(x) * (1 - _sig(x)) * (1 - 2 * _sig(x)),
                lambda x: _sig(x) * (1 - _sig(x)) * (1 - 6 * _sig(x) + 6 * _sig(x) ** 2)),
    "sin": ((-2, 2), np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)),
    "cos": ((-2, 2), lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin),
    "exp": ((-1, 1), np.exp, np.exp, np.exp),
    "log": ((0.5, 2), lambda x: 1 / x, lambda x: -1 / x ** 2, lambda x: 2 / x ** 3),
    "sqrt": ((0.5, 2), lambda x: 0.5 * x ** -0.5, lambda x: -0.25 * x ** -1.5,
             lambda x: 0.375 * x ** -2.5),
    "square": ((-2, 2), lambda x: 2 * x, lambda x: 2 + 0 * x, lambda x: 0 * x),
    "reciprocal": ((0.5, 2), lambda x: -1 / x ** 2, lambda x: 2 / x ** 3,
                   lambda x: -6 / x ** 4),
    "relu": ((-2, 2), lambda x: (x > 0) * 1.0, lambda x: 0 * x, lambda x: 0 * x),
    "rsqrt": ((0.5, 2), lambda x: -0.5 * x ** -1.5, lambda x: 0.75 * x ** -2.5,
              lambda x: -1.875 * x ** -3.5),
    "log1p": ((0.1, 2), lambda x: 1 / (1 + x), lambda x: -1 / (1 + x) ** 2,
              lambda x: 2 / (1 + x) ** 3),
    "expm1": ((-1, 1), np.exp, np.exp, np.exp),
    "sinh": ((-1, 1), np.cosh, np.sinh, np.cosh),
    "cosh": ((-1, 1), np.sinh, np.cosh, np.sinh),
    "arctan": ((-1, 1), lambda x: 1 / (1 + x * x), lambda x: -2 * x / (1 + x * x) ** 2,
               lambda x: (6 * x * x - 2) / (1 + x * x) ** 3),
}


def _xs(domain, n=5):
    rng = np.random.default_rng(7)
    x = rng.uniform(*domain, n)
    return np.where(np.abs(x) < 0.05, 0.3, x)     # keep away from relu's kink


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_first_second_third(name):
    domain, d1, d2, d3 = UNARY[name]
    xv = _xs(domain)
    x = _var(xv)
    f = getattr(nd, name)
    with ag.record():
        y = f(x)
    (g1,) = ag.grad(y, x, create_graph=True)
    (g2,) = ag.grad(g1, x, create_graph=True)
    g2.backward()
    np.testing.assert_allclose(g1.asnumpy(), d1(xv), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g2.asnumpy(), d2(xv), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), d3(xv), rtol=1e-10, atol=1e-12)


def test_grad_inside_record_and_head_grads():
    xv = _xs((-1, 1))
    hv = np.linspace(0.5, 2, xv.size)
    x = _var(xv)
    with ag.record():
        y = nd.sin(x) * x
        (g,) = ag.grad(y, x, head_grads=nd.array(hv, dtype="float64"), create_graph=True)
        z = g * g
    z.backward()
    d1 = (np.cos(xv) * xv + np.sin(xv)) * hv
    d2 = (-np.sin(xv) * xv + 2 * np.cos(xv)) * hv
    np.testing.assert_allclose(g.asnumpy(), d1, rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * d1 * d2, rtol=1e-10)


def test_create_graph_gradient_wrt_head_grads():
    xv = _xs((-1, 1))
    x = _var(xv)
    h = _var(np.ones_like(xv) * 0.5)
    with ag.record():
        y = nd.exp(x)
    (g,) = ag.grad(y, x, head_grads=h, create_graph=True)    # g = h * exp(x)
    g.backward()
    np.testing.assert_allclose(h.grad.asnumpy(), np.exp(xv), rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), 0.5 * np.exp(xv), rtol=1e-12)


def _fd_of_grad(fn, values, first, second, v, eps=1e-6):
    """d/d values[second] of sum(v * d fn(values)/d values[first]), by central differences
    of first-order autograd gradients."""
    def grad_first(vals):
        xs = [_var(a) for a in vals]
        with ag.record():
            y = fn(*xs)
        return ag.grad(y, xs[first])[0].asnumpy()

    base = [np.array(a, dtype=np.float64) for a in values]
    out = np.zeros_like(base[second])
    flat = base[second].reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        fp = np.sum(v * grad_first(base))
        flat[i] = old - eps
        fm = np.sum(v * grad_first(base))
        flat[i] = old
        out.reshape(-1)[i] = (fp - fm) / (2 * eps)
    return out


def _mixed_second(fn, values, first, second, v):
    xs = [_var(a) for a in values]
    with ag.record():
        y = fn(*xs)
    (g,) = ag.grad(y, xs[first], create_graph=True)
    return ag.grad(g, xs[second], head_grads=nd.array(v, dtype="float64"))[0].asnumpy()


def test_broadcast_arithmetic_second_order():
    rng = np.random.default_rng(3)
    av, bv = rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.5, 1.5, (1, 3))
    h = rng.uniform(-1, 1, (2, 3))

    def fn(a, b):
        return (a * b + a / b - b * b) * nd.array(h, dtype="float64")

    va = rng.uniform(-1, 1, (2, 3))
    vb = rng.uniform(-1, 1, (1, 3))
    # closed forms: ga = h*(b + 1/b); gb = sum_0 h*(a - a/b^2 - 2b)
    np.testing.assert_allclose(_mixed_second(fn, [av, bv], 0, 1, va),
                               (va * h * (1 - 1 / bv ** 2)).sum(0, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(_mixed_second(fn, [av, bv], 1, 0, vb),
                               vb * h * (1 - 1 / bv ** 2), rtol=1e-10)
    np.testing.assert_allclose(_mixed_second(fn, [av, bv], 1, 1, vb),
                               _fd_of_grad(fn, [av, bv], 1, 1, vb), rtol=1e-6, atol=1e-8)


def test_broadcast_power_second_order():
    rng = np.random.default_rng(4)
    av, bv = rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.5, 1.5, (3,))

    def fn(a, b):
        return a ** b

    for first, second, shape in [(0, 0, (2, 3)), (0, 1, (2, 3)), (1, 0, (3,)), (1, 1, (3,))]:
        v = rng.uniform(-1, 1, shape)
        np.testing.assert_allclose(_mixed_second(fn, [av, bv], first, second, v),
                                   _fd_of_grad(fn, [av, bv], first, second, v),
                                   rtol=1e-6, atol=1e-8)


def _need(*ops):
    missing = [o for o in ops if o not in all_names()]
    if missing:
        pytest.skip(f"ops not registered yet: {missing}")


def test_dot_tanh_second_order():
    _need("dot")
    rng = np.random.default_rng(5)
    xv, wv = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3, 4))
    hv = rng.uniform(-1, 1, (2, 4))

    def fn(x, w):
        return nd.tanh(nd.dot(x, w)) * nd.array(hv, dtype="float64")

    v = rng.uniform(-1, 1, (2, 3))
    t = np.tanh(xv @ wv)
    # d/dx sum(v * (h (1-t^2)) W^T) = ((v W) * h * -2t(1-t^2)) W^T
    expect = ((v @ wv) * hv * (-2 * t) * (1 - t * t)) @ wv.T
    np.testing.assert_allclose(_mixed_second(fn, [xv, wv], 0, 0, v), expect, rtol=1e-10)
    np.testing.assert_allclose(_mixed_second(fn, [xv, wv], 0, 1, v),
                               _fd_of_grad(fn, [xv, wv], 0, 1, v), rtol=1e-6, atol=1e-8)


def test_fully_connected_sigmoid_second_and_third_order():
    _need("FullyConnected")
    rng = np.random.default_rng(6)
    xv, wv, bv = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, 4)

    def fn(x, w, b):
        return nd.sigmoid(nd.FullyConnected(x, w, b, num_hidden=4))

    v = rng.uniform(-1, 1, (2, 3))
    np.testing.assert_allclose(_mixed_second(fn, [xv, wv, bv], 0, 1, v),
                               _fd_of_grad(fn, [xv, wv, bv], 0, 1, v), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_mixed_second(fn, [xv, wv, bv], 0, 2, v),
                               _fd_of_grad(fn, [xv, wv, bv], 0, 2, v), rtol=1e-6, atol=1e-8)
    # first order through create_graph, and third order in x against closed forms
    w = nd.array(wv, dtype="float64")
    b = nd.array(bv, dtype="float64")
    z = xv @ wv.T + bv
    sg = _sig(z)
    ones = np.ones((2, 4))
    x2 = _var(xv)
    with ag.record():
        s2 = nd.sigmoid(nd.FullyConnected(x2, w, b, num_hidden=4))
    (gx,) = ag.grad(s2, x2, create_graph=True)
    (g2,) = ag.grad(gx, x2, head_grads=nd.array(v, dtype="float64"), create_graph=True)
    (g3,) = ag.grad(g2, x2, head_grads=nd.array(v, dtype="float64"))
    s1 = sg * (1 - sg)
    s2_ = s1 * (1 - 2 * sg)
    s3 = s1 * (1 - 6 * sg + 6 * sg * sg)
    vw = v @ wv.T
    np.testing.assert_allclose(g2.asnumpy(), (s2_ * vw) @ wv, rtol=1e-10)
    np.testing.assert_allclose(g3.asnumpy(), (s3 * vw * vw) @ wv, rtol=1e-10)
    np.testing.assert_allclose(gx.asnumpy(), (ones * sg * (1 - sg)) @ wv, rtol=1e-10)


def test_third_order_of_composition():
    xv = _xs((0.5, 1.5))
    x = _var(xv)
    with ag.record():
        y = nd.exp(x) * nd.sin(x)            # y''' = 2 e^x (cos x - sin x)
    (g1,) = ag.grad(y, x, create_graph=True)
    (g2,) = ag.grad(g1, x, create_graph=True)
    (g3,) = ag.grad(g2, x)
    np.testing.assert_allclose(g3.asnumpy(), 2 * np.exp(xv) * (np.cos(xv) - np.sin(xv)),
                               rtol=1e-10)
