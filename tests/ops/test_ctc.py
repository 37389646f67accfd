"""CTCLoss: against a brute-force sum over alignments, finite differences, and MXNet 1.9.1."""
import itertools
import math

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, nd
from gpunda.base import GpundaError


def _collapse(path, blank):
    out = []
    prev = None
    for k in path:
        if k != prev and k != blank:
            out.append(k)
        prev = k
    return out


def _brute_force_loss(acts, label, blank):
    """-log of the summed probability of every path (T steps) that collapses to label."""
    logp = acts - np.log(np.exp(acts).sum(axis=1, keepdims=True))
    total = 0.0
    for path in itertools.product(range(acts.shape[1]), repeat=acts.shape[0]):
        if _collapse(path, blank) == list(label):
            total += math.exp(sum(logp[t, k] for t, k in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


@pytest.mark.parametrize("blank_label", ["first", "last"])
def test_loss_matches_the_sum_over_alignments(blank_label):
    rng = np.random.RandomState(0)
    t, n, c = 5, 3, 4
    acts = rng.randn(t, n, c)
    blank = 0 if blank_label == "first" else c - 1
    labels = [[1, 2, 2], [1], [2, 1]] if blank == 0 else [[0, 1, 1], [0], [1, 0]]
    pad = 0 if blank == 0 else -1
    padded = np.array([lab + [pad] * (3 - len(lab)) for lab in labels])
    steps = np.array([5, 3, 4])
    got = nd.ctc_loss(nd.array(acts, dtype="float64"), nd.array(padded), nd.array(steps),
                      use_data_lengths=True, blank_label=blank_label).asnumpy()
    ref = [_brute_force_loss(acts[:steps[i], i], labels[i], blank) for i in range(n)]
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    # label_lengths instead of padding: values past the length are ignored
    junk = padded.copy()
    junk[1, 1:] = 1 if blank == 0 else 0
    got2 = nd.ctc_loss(nd.array(acts, dtype="float64"), nd.array(junk), nd.array(steps),
                       nd.array([3, 1, 2]), use_data_lengths=True, use_label_lengths=True,
                       blank_label=blank_label).asnumpy()
    np.testing.assert_allclose(got2, ref, rtol=1e-10)


def test_gradient_matches_finite_differences():
    rng = np.random.RandomState(1)
    acts = rng.randn(5, 2, 4)
    label = nd.array([[1, 3, 3], [2, 0, 0]])
    head = np.array([0.7, -1.3])

    def f(a):
        return float((nd.ctc_loss(nd.array(a, dtype="float64"), label).asnumpy() * head).sum())

    x = nd.array(acts, dtype="float64")
    x.attach_grad()
    with autograd.record():
        loss = nd.ctc_loss(x, label)
    loss.backward(nd.array(head, dtype="float64"))
    eps = 1e-6
    num = np.zeros_like(acts)
    for idx in np.ndindex(*acts.shape):
        hi, lo = acts.copy(), acts.copy()
        hi[idx] += eps
        lo[idx] -= eps
        num[idx] = (f(hi) - f(lo)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


# from MXNet 1.9.1: nd.ctc_loss(data, label, data_lengths=[4, 3], use_data_lengths=True),
# backward with head gradient [1.0, 0.5]
_DATA = [[[-0.417, -0.056, -2.136, 1.64], [-1.793, -0.842, 0.503, -1.245]],
         [[-1.058, -0.909, 0.551, 2.292], [0.042, -1.118, 0.539, -0.596]],
         [[-0.019, 1.175, -0.748, 0.009], [-0.878, -0.156, 0.257, -0.989]],
         [[-0.339, -0.236, -0.638, -1.188], [-1.421, -0.153, -0.269, 2.231]]]
_MX_LOSS = [6.1780171394348145, 1.4632877111434937]
_MX_GRAD = [[[0.008335, -0.775042, 0.017175, 0.749532], [-0.023977, 0.084849, -0.117577, 0.056705]],
            [[-0.758959, -0.180453, 0.140147, 0.799264], [0.068419, 0.044969, -0.189178, 0.07579]],
            [[-0.149055, -0.110931, 0.083013, 0.176973], [-0.08973, 0.145693, -0.119303, 0.063339]],
            [[-0.01689, -0.339864, 0.22623, 0.130524], [0.0, 0.0, 0.0, 0.0]]]

# from MXNet 1.9.1: losses of np.random.RandomState(1).randn(6, 3, 5) float32 activations
_MX_CASES = [
    ("first_pad", [[1, 2, 2], [3, 0, 0], [4, 1, 0]], None, None, "first",
     [6.619908332824707, 7.327428340911865, 6.363308429718018]),
    ("last_pad", [[1, 2, 2], [3, -1, -1], [0, 1, -1]], None, None, "last",
     [5.460932731628418, 6.193801403045654, 5.3016180992126465]),
    ("lengths", [[1, 2, 2], [3, 3, 0], [4, 1, 1]], [6, 4, 3], [3, 2, 1], "first",
     [6.619908332824707, 6.1553635597229, 2.4359960556030273]),
    ("dl_only", [[1, 2, 1], [3, 0, 0], [4, 1, 0]], [5, 6, 2], None, "first",
     [3.6186587810516357, 7.327428340911865, 2.627323865890503]),
    ("ll_last", [[0, 0, 2], [3, 1, 0], [2, 1, 1]], None, [2, 3, 0], "last",
     [6.806130409240723, 6.777012825012207, 7.784812927246094]),
    # sample 0 cannot fit (3 labels + 2 repeats > 4 steps): MXNet gives loss 0
    ("impossible", [[1, 1, 1], [3, 0, 0], [4, 1, 0]], [4, 6, 6], None, "first",
     [0.0, 7.327428340911865, 6.363308429718018]),
]


def test_values_and_gradient_match_mxnet():
    x = nd.array(_DATA)
    x.attach_grad()
    with autograd.record():
        loss = nd.ctc_loss(x, nd.array([[1, 1], [2, 0]]), nd.array([4, 3]),
                           use_data_lengths=True)
    loss.backward(nd.array([1.0, 0.5]))
    np.testing.assert_allclose(loss.asnumpy(), _MX_LOSS, rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), _MX_GRAD, atol=1e-5)


@pytest.mark.parametrize("case", _MX_CASES, ids=[c[0] for c in _MX_CASES])
def test_losses_match_mxnet(case):
    _, label, dl, ll, blank, expected = case
    data = np.random.RandomState(1).randn(6, 3, 5).astype(np.float32)
    args = [nd.array(data), nd.array(label)]
    kw = {"blank_label": blank}
    if dl is not None:
        args.append(nd.array(dl))
        kw["use_data_lengths"] = True
    if ll is not None:
        args.append(nd.array(ll))
        kw["use_label_lengths"] = True
    x = args[0]
    x.attach_grad()
    with autograd.record():
        out = nd.CTCLoss(*args, **kw)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5)
    if case[0] == "impossible":
        assert not x.grad.asnumpy()[:, 0].any()


def test_aliases_outputs_and_symbol():
    data = nd.array(np.random.RandomState(0).randn(3, 2, 4))
    label = nd.array([[1, 2], [3, 0]])
    ref = nd.CTCLoss(data, label).asnumpy()
    for fn in (nd.ctc_loss, nd.contrib.CTCLoss, nd.contrib.ctc_loss):
        np.testing.assert_allclose(fn(data, label).asnumpy(), ref)
    assert nd.CTCLoss(data, label).shape == (2,)
    s = mx.sym.CTCLoss(mx.sym.var("data"), mx.sym.var("label"))
    assert s.list_arguments() == ["data", "label"]
    _, out_shapes, _ = s.infer_shape(data=(3, 2, 4), label=(2, 2))
    assert out_shapes == [(2,)]


def test_second_order_raises():
    x = nd.array(np.random.RandomState(0).randn(3, 1, 3))
    x.attach_grad()
    with autograd.record():
        loss = nd.ctc_loss(x, nd.array([[1, 2]]))
        total = autograd.grad(loss, [x], create_graph=True)[0].sum()
    with pytest.raises(GpundaError, match="non-differentiable because it didn.t register FGradient"):
        total.backward()


def test_bad_input_raises():
    data = nd.zeros((3, 2, 4))
    with pytest.raises(GpundaError, match="3-D"):
        nd.ctc_loss(nd.zeros((3, 4)), nd.zeros((2, 2)))
    with pytest.raises(GpundaError, match="batch size"):
        nd.ctc_loss(data, nd.zeros((3, 2)))
    with pytest.raises(GpundaError, match="cannot exceed"):
        nd.ctc_loss(data, nd.ones((2, 4)))
    with pytest.raises(GpundaError, match="label values"):
        nd.ctc_loss(data, nd.array([[5, 1], [1, 0]]))
    with pytest.raises(GpundaError, match="blank_label"):
        nd.ctc_loss(data, nd.array([[1, 1], [1, 0]]), blank_label="middle")
    with pytest.raises(GpundaError, match="data_lengths"):
        nd.ctc_loss(data, nd.array([[1, 1], [1, 0]]), nd.array([4, 1]), use_data_lengths=True)


def test_steps_past_data_lengths_are_never_read():
    # as in MXNet's test_ctc_loss_grad: padded steps hold NaN, their gradient is 0
    rng = np.random.RandomState(4)
    acts = rng.randn(6, 2, 4)
    acts[4:, 0] = np.nan
    label = nd.array([[1, 2], [3, 0]])
    x = nd.array(acts, dtype="float64")
    x.attach_grad()
    with autograd.record():
        loss = nd.CTCLoss(x, label, nd.array([4, 6]), use_data_lengths=True)
    loss.backward()
    ref = nd.CTCLoss(nd.array(acts[:4, :1], dtype="float64"), label[:1]).asnumpy()
    np.testing.assert_allclose(loss.asnumpy()[:1], ref, rtol=1e-12)
    g = x.grad.asnumpy()
    assert np.isfinite(g).all() and not g[4:, 0].any()
