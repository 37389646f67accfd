"""Every gluon loss against MXNet 1.9.1: the same inputs, imperative and hybridized.

``MXNET`` holds the outputs real MXNet 1.9.1 gave for these inputs (7 significant digits).
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd

L = gluon.loss

# from MXNet 1.9.1
MXNET = {
    'l2': [0.2537588, 0.8803766, 0.08810579, 0.8497624],
    'l2_w_sw': [0.1559468, 1.296176, 0.09842775, 1.217033],
    'l2_ba1': [1.387966, 0.5477172, 1.950055, 0.7458075],
    'l1': [0.113717, 0.5441083, 0.1410831, 0.4591123],
    'l1_ba1': [0.6778502, 0.3367638, 0.7949913, 0.507661],
    'bce': [0.2405259, 0.258263, 0.4883259, 0.3578848],
    'bce_pw': [1.236476, 0.5303835, 1.442143, 0.8684679],
    'bce_sig': [1.174161, 0.5262447, 1.311348, 0.7496521],
    'bce_sig_pw': [2.472952, 1.060767, 2.884287, 1.736936],
    'ce': [0.05473747, 0.5314735, 1.163924, 0.6372489],
    'ce_dense': [0.5214867, 1.10865, 2.823849, 1.313618],
    'ce_logits': [-3.381051, -0.004131146, 3.509449, 0.3430965],
    'ce_axis1': [1.468235, 2.547436],
    'kl': [0.2157201, 0.02317553, -0.0221489, -0.1504557],
    'kl_nolog': [0.03809764, 0.01010362, 0.02791421, 0.01602708],
    'huber': [0.0627769, 0.4114026, 0.04687035, 0.323577],
    'hinge': [0.03870847, 0.0965857, 0.2503378, 0.2313614],
    'sqhinge': [0.4506468, 0.4638212, 1.689721, 1.162651],
    'logistic': [0.09327606, 0.2579251, 0.2704046, 0.3345529],
    'logistic_bin': [1.174161, 0.5262447, 1.311348, 0.7496521],
    'triplet': [0.0, 0.0, 0.0, 4.901963],
    'triplet_w': [0.0, 0.0],
    'poisson': [1.253755],
    'poisson_rate': [0.535727],
    'poisson_full': [2.639335],
    'cosine': [[0.1076375], [0.0], [0.9485622], [1.007252]],
    'cosine_m': [[0.02204945], [0.0], [0.2787531], [0.4808633]],
    'sdml': [0.9284104, 3.281579, 0.5385446, 3.517462],
    'sdml_s': [0.2365798, 0.5021408, 0.09666163, 0.5184611],
    'ctc': [3.797611, 5.472401],
    'ctc_tnc': [3.797611, 5.472401],
    'ctc_len': [7.208483, 10.9448],
    'ctc_sw': [1.898806, 10.9448],
}


def _cases():
    rng = np.random.RandomState(7)
    pred = rng.randn(4, 3).astype(np.float32)
    lab = rng.randn(4, 3).astype(np.float32)
    sw = rng.rand(4, 1).astype(np.float32)
    cls = np.array([0, 2, 1, 2])
    sign = np.sign(rng.randn(4, 3)).astype(np.float32)
    binl = (rng.rand(4, 3) > 0.5).astype(np.float32)
    pw = rng.rand(1, 3).astype(np.float32) + 0.5
    prob = 1 / (1 + np.exp(-pred))
    p3 = rng.randn(2, 4, 3).astype(np.float32)
    l3 = rng.randn(2, 4, 3).astype(np.float32)
    norm = prob / prob.sum(1, keepdims=True)
    c = {
        "l2": (L.L2Loss(), pred, lab),
        "l2_w_sw": (L.L2Loss(weight=3.0), pred, lab, sw),
        "l2_ba1": (L.L2Loss(batch_axis=1), p3, l3),
        "l1": (L.L1Loss(), pred, lab, sw),
        "l1_ba1": (L.L1Loss(batch_axis=1, weight=0.5), p3, l3),
        "bce": (L.SigmoidBCELoss(), pred, binl, sw),
        "bce_pw": (L.SigmoidBCELoss(), pred, binl, None, pw),
        "bce_sig": (L.SigmoidBCELoss(from_sigmoid=True), prob, binl),
        "bce_sig_pw": (L.SigmoidBCELoss(from_sigmoid=True, weight=2.0), prob, binl, None, pw),
        "ce": (L.SoftmaxCELoss(), pred, cls, sw),
        "ce_dense": (L.SoftmaxCELoss(sparse_label=False), pred, np.eye(3)[cls] * 0.8 + 0.2 / 3),
        "ce_logits": (L.SoftmaxCELoss(from_logits=True, weight=2.0), pred, cls),
        "ce_axis1": (L.SoftmaxCELoss(axis=1), p3, rng.randint(0, 4, (2, 3))),
        "kl": (L.KLDivLoss(), np.log(norm), prob / prob.sum(1, keepdims=True)[::-1]),
        "kl_nolog": (L.KLDivLoss(from_logits=False), pred, norm, sw),
        "huber": (L.HuberLoss(rho=0.7), pred, lab, sw),
        "hinge": (L.HingeLoss(margin=0.5), pred, sign, sw),
        "sqhinge": (L.SquaredHingeLoss(), pred, sign),
        "logistic": (L.LogisticLoss(), pred, sign, sw),
        "logistic_bin": (L.LogisticLoss(label_format="binary"), pred, binl),
        "triplet": (L.TripletLoss(margin=0.3), pred, lab, rng.randn(4, 3)),
        "triplet_w": (L.TripletLoss(weight=2.0), p3, l3, rng.randn(2, 4, 3)),
    }
    cnt = rng.poisson(3, (4, 3)).astype(np.float32) + 1
    c.update({
        "poisson": (L.PoissonNLLLoss(), pred, cnt),
        "poisson_rate": (L.PoissonNLLLoss(from_logits=False), np.exp(pred), cnt, sw),
        "poisson_full": (L.PoissonNLLLoss(compute_full=True, weight=0.5), pred, cnt),
        "cosine": (L.CosineEmbeddingLoss(), pred, lab, np.array([1, -1, -1, 1])),
        "cosine_m": (L.CosineEmbeddingLoss(margin=0.2), pred, lab, np.array([1, -1, -1, 1]), sw),
        "sdml": (L.SDMLLoss(), pred, lab),
        "sdml_s": (L.SDMLLoss(smoothing_parameter=0.1), pred, pred + 0.1 * lab),
    })
    acts = rng.randn(2, 5, 4).astype(np.float32)
    ctc_lab = np.array([[1, 0, -1], [2, 2, 1]])
    c.update({
        "ctc": (L.CTCLoss(), acts, ctc_lab),
        "ctc_tnc": (L.CTCLoss(layout="TNC", label_layout="TN"), acts.transpose(1, 0, 2), ctc_lab.T),
        "ctc_len": (L.CTCLoss(weight=2.0), acts, np.array([[1, 0, 2], [2, 2, 1]]),
                    np.array([4, 5]), np.array([1, 3])),
        "ctc_sw": (L.CTCLoss(), acts, ctc_lab, None, None, np.array([0.5, 2.0])),
    })
    return c


def _nd(a):
    return None if a is None else nd.array(np.asarray(a, dtype=np.float32))


# SDMLLoss reads the batch size from x1.shape, so (as in MXNet) it runs imperatively only
_HYBRID = [(n, h) for n in sorted(MXNET) for h in (False, True)
           if not (h and n.startswith("sdml"))]


@pytest.mark.parametrize("name,hybrid", _HYBRID)
def test_loss_matches_mxnet(name, hybrid):
    loss, *args = _cases()[name]
    loss.hybridize(hybrid)
    got = loss(*[_nd(a) for a in args]).asnumpy()
    np.testing.assert_allclose(got, np.asarray(MXNET[name], dtype=np.float32), rtol=2e-5,
                               atol=1e-6)


def test_aliases_and_module_names():
    assert L.SigmoidBCELoss is L.SigmoidBinaryCrossEntropyLoss
    assert L.SoftmaxCELoss is L.SoftmaxCrossEntropyLoss
    assert L.is_np_array() is False and L.numeric_types


def test_ctc_loss_mxnet_suite_values_and_gradient():
    # MXNet's own expectations (tests/python/unittest/test_loss.py::test_ctc_loss)
    expected = [18.82820702, 16.50581741]
    loss = L.CTCLoss()
    np.testing.assert_allclose(loss(nd.ones((2, 20, 4)), nd.array([[1, 0, -1, -1], [2, 1, 1, -1]]))
                               .asnumpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(loss(nd.ones((2, 25, 4)), nd.array([[2, 1, 3, 3], [3, 2, 2, 3]]),
                                    nd.array([20, 20]), nd.array([2, 3])).asnumpy(),
                               expected, rtol=1e-5)
    x = nd.array(np.random.RandomState(0).randn(2, 6, 4))
    x.attach_grad()
    with autograd.record():
        out = loss(x, nd.array([[1, 0], [2, -1]]))
    out.backward()
    # the gradient of -log p w.r.t. the activations sums to 0 over the classes
    np.testing.assert_allclose(x.grad.asnumpy().sum(axis=2), 0, atol=1e-5)


def test_bad_layouts_raise():
    with pytest.raises(ValueError, match="layouts for pred"):
        L.CTCLoss(layout="NCT")
    with pytest.raises(ValueError, match="layouts for label"):
        L.CTCLoss(label_layout="NN")
