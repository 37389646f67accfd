"""Inputs MXNet 1.9.1's legacy (``nd``) operators refuse, refused alike by gpunda (issue 38).

Each refusal below was observed on MXNet 1.9.1 (/work/mxref); the snippet and its message
are quoted with the test. The classes follow MXNet's source: kernels instantiated through
mshadow's type switches (NOTE [Dtypes a kernel is instantiated for] in ops/_util.py), the
update ops' type inference (NOTE [Update ops check before they write] in
ops/optimizer/updates.py), and parameter enums. Each test also checks that the dtypes MXNet
accepts still compute the right values.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError

_DTYPES = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool")


def _x(dtype, shape=(2, 3, 4, 4)):
    return nd.ones(shape, dtype=dtype)


# mx.nd.broadcast_add(a, a) with a = mx.nd.array([1, 0], dtype='bool'):
#   MXNetError: Operator broadcast_add does not support boolean type
_BINARY = ["elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_equal",
           "_not_equal", "_greater", "_greater_equal", "_lesser", "_lesser_equal",
           "_logical_and", "_logical_or", "_power", "_maximum", "_hypot", "_mod",
           "broadcast_add", "broadcast_mul", "broadcast_div", "broadcast_power",
           "broadcast_maximum", "broadcast_hypot", "broadcast_equal", "broadcast_not_equal",
           "broadcast_greater", "broadcast_lesser_equal", "broadcast_logical_and"]


@pytest.mark.parametrize("name", _BINARY)
def test_legacy_binary_ops_refuse_bool(name):
    f = getattr(nd, name, None) or getattr(nd._internal, name)
    b = nd.array([1, 0, 1], dtype="bool")
    with pytest.raises(GpundaError, match="does not support boolean type"):
        f(b, b)
    a = nd.array([1.0, 2.0, 3.0])
    assert f(a, a).shape == (3,)      # the numeric dtypes keep working


def test_legacy_scalar_ops_still_take_bool():
    # mx.nd._internal._plus_scalar(mx.nd.array([1, 0, 1], dtype='bool'), scalar=1) works in
    # MXNet 1.9.1: int64 [2, 1, 2]
    b = nd.array([1, 0, 1], dtype="bool")
    r = nd._internal._plus_scalar(b, scalar=1)
    assert r.dtype == np.int64
    np.testing.assert_array_equal(r.asnumpy(), [2, 1, 2])


# mx.nd.Activation(mx.nd.ones((2, 3), dtype='int32'), act_type='relu'):
#   MXNetError: This operation only support floating point types, not int32
# (bool: "Unknown type enum 7")
_REAL_ONLY = {
    "Activation": lambda x: nd.Activation(x, act_type="relu"),
    "Dropout": lambda x: nd.Dropout(x),
    "L2Normalization": lambda x: nd.L2Normalization(x),
    "LinearRegressionOutput": lambda x: nd.LinearRegressionOutput(x, x),
    "LogisticRegressionOutput": lambda x: nd.LogisticRegressionOutput(x, x),
    "MAERegressionOutput": lambda x: nd.MAERegressionOutput(x, x),
    "hard_sigmoid": lambda x: nd.hard_sigmoid(x),
    "all_finite": lambda x: nd.all_finite(x),
    "LRN": lambda x: nd.LRN(x, nsize=3),
    "SoftmaxActivation": lambda x: nd.SoftmaxActivation(x),
    "FullyConnected": lambda x: nd.FullyConnected(x.reshape((2, -1)), nd.ones((2, 48), dtype=x.dtype),
                                                  no_bias=True, num_hidden=2),
    "normal_like": lambda x: nd.random.normal_like(x),
    "uniform_like": lambda x: nd.random.uniform_like(x),
    "gamma_like": lambda x: nd.random.gamma_like(x),
    "poisson_like": lambda x: nd.random.poisson_like(x),
    "negative_binomial_like": lambda x: nd.random.negative_binomial_like(x),
    "_random_pdf_normal": lambda x: nd._internal._random_pdf_normal(
        x.reshape((2, -1)), nd.ones((2,), dtype=x.dtype), nd.ones((2,), dtype=x.dtype)),
    "_random_pdf_dirichlet": lambda x: nd._internal._random_pdf_dirichlet(
        x.reshape((2, -1)) / 48, x.reshape((2, -1))),
    "_sample_multinomial": lambda x: nd._internal._sample_multinomial(x.reshape((2, -1)) / 48),
}


@pytest.mark.parametrize("name", sorted(_REAL_ONLY))
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "bool"])
def test_float_only_kernels_refuse_other_dtypes(name, dtype):
    with pytest.raises(GpundaError, match="only support floating point types"):
        _REAL_ONLY[name](_x(dtype))


@pytest.mark.parametrize("name", sorted(_REAL_ONLY))
def test_float_only_kernels_take_float32(name):
    r = _REAL_ONLY[name](_x("float32"))
    for o in (r if isinstance(r, (list, tuple)) else [r]):
        o.asnumpy()


def test_activation_float_values():
    x = np.array([-1.5, 0.0, 2.0])
    for dt in ("float16", "float32", "float64"):
        y = nd.Activation(nd.array(x, dtype=dt), act_type="relu")
        assert y.dtype == np.dtype(dt)
        np.testing.assert_array_equal(y.asnumpy(), np.maximum(x, 0).astype(dt))


# mx.nd.argmax(mx.nd.ones((3,), dtype='bool')):  MXNetError: Unknown type enum 7
# (every numeric dtype is accepted)
_NO_BOOL = {
    "SliceChannel": lambda x: nd.SliceChannel(x, num_outputs=1),
    "smooth_l1": lambda x: nd.smooth_l1(x),
    "clip": lambda x: nd.clip(x, 0, 1),
    "argmax": lambda x: nd.argmax(x, axis=1),
    "argmin": lambda x: nd.argmin(x, axis=1),
    "argmax_channel": lambda x: nd.argmax_channel(x),
    "argsort": lambda x: nd.argsort(x),
    "sort": lambda x: nd.sort(x),
    "topk": lambda x: nd.topk(x),
    "diag": lambda x: nd.diag(x),
    "moments": lambda x: nd.moments(x, axes=(0,)),
    "_sample_normal": lambda x: nd._internal._sample_normal(x, x),
    "_sample_poisson": lambda x: nd._internal._sample_poisson(x),
}


@pytest.mark.parametrize("name", sorted(_NO_BOOL))
def test_numeric_kernels_refuse_bool(name):
    with pytest.raises(GpundaError, match="Unknown type enum 7|no bool type"):
        _NO_BOOL[name](nd.ones((2, 3), dtype="bool"))
    r = _NO_BOOL[name](nd.ones((2, 3), dtype="int32"))
    for o in (r if isinstance(r, (list, tuple)) else [r]):
        o.asnumpy()


def test_argmax_int_values():
    x = np.array([[3, 9, 1], [7, 2, 8]], dtype=np.int32)
    r = nd.argmax(nd.array(x, dtype="int32"), axis=1)
    np.testing.assert_array_equal(r.asnumpy(), [1, 2])


def test_bool_sparse_storage_refused():
    # mx.nd.ones((2, 2), dtype='bool').tostype('csr'):  MXNetError: Unknown type enum 7
    b = nd.ones((2, 2), dtype="bool")
    for stype in ("csr", "row_sparse"):
        with pytest.raises(GpundaError, match="bool"):
            b.tostype(stype)
    assert b.tostype("default").dtype == np.bool_


# mx.nd.linalg.gemm2(mx.nd.ones((2, 2), dtype='float16'), ...):
#   MXNetError: This operation only supports 32-bit and 64-bit floating point
@pytest.mark.parametrize("dtype", ["float16", "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", ["gemm2", "extractdiag", "makediag", "syrk", "sumlogdiag",
                                  "potrf", "inverse"])
def test_linalg_ops_take_float32_float64_only(name, dtype):
    f = getattr(nd.linalg, name)
    args = [nd.ones((2, 2), dtype=dtype)] * (2 if name == "gemm2" else 1)
    with pytest.raises(GpundaError, match="32-bit and 64-bit floating point"):
        f(*args)


def test_linalg_gemm2_float64_values():
    a = np.arange(6.0).reshape(2, 3)
    r = nd.linalg.gemm2(nd.array(a, dtype="float64"), nd.array(a.T, dtype="float64"))
    assert r.dtype == np.float64
    np.testing.assert_allclose(r.asnumpy(), a @ a.T)


def test_np_eigh_of_integers_is_float64():
    # MXNet 1.9.1 (npx.set_np()): np.linalg.eigh(np.array([[2, 1], [1, 2]], dtype='int8'))
    # gives float64 eigenvalues [1., 3.]; float16 is refused ("array type float16")
    from gpunda import np as mnp
    w, v = mnp.linalg.eigh(mnp.array([[2, 1], [1, 2]], dtype="int8"))
    assert w.dtype == np.float64 and v.dtype == np.float64
    np.testing.assert_allclose(w.asnumpy(), [1.0, 3.0])
    with pytest.raises(GpundaError):
        mnp.linalg.eigh(mnp.array([[2, 1], [1, 2]], dtype="float16"))


def test_sample_dtype_enum():
    # mx.nd._internal._sample_normal(mu, sigma, dtype='int32'):  MXNetError: Invalid Input:
    # 'int32', valid values are: {'None', 'float16', 'float32', 'float64'}
    mu = nd.zeros((2,))
    with pytest.raises(GpundaError, match="valid values are"):
        nd._internal._sample_normal(mu, mu + 1, dtype="int32")
    assert nd._internal._sample_normal(mu, mu + 1, dtype="float16").dtype == np.float16
    # _sample_multinomial's enum is {'float16', 'float32', 'float64', 'int32', 'uint8'}
    p = nd.array([[0.5, 0.5]])
    with pytest.raises(GpundaError, match="valid values are"):
        nd._internal._sample_multinomial(p, dtype="int64")
    assert nd._internal._sample_multinomial(p, dtype="uint8").dtype == np.uint8


def test_negative_binomial_with_k_zero_is_zero():
    # mx.nd.random.negative_binomial_like(mx.nd.ones((4,)), k=0, p=0.5) -> [0, 0, 0, 0]
    np.testing.assert_array_equal(
        nd.random.negative_binomial_like(nd.ones((4,)), k=0, p=0.5).asnumpy(), [0, 0, 0, 0])
    r = nd._internal._sample_negative_binomial(nd.array([0.0, 0.0]), nd.array([0.5, 0.3]),
                                               shape=(3,))
    np.testing.assert_array_equal(r.asnumpy(), np.zeros((2, 3)))


def test_integer_power_as_mxnet():
    # MXNet 1.9.1 computes integer powers in double and casts back (C truncation, INT_MIN
    # for inf):
    #   _power([2, 3, -1, 0, 1, -2], [-1, -2, -2, -1, -3, -1]) (int64) -> [0, 0, 1, INT64_MIN, 1, 0]
    #   _rpower_scalar([-1, 0, 2, 3, -2] int32, scalar=0.5) -> [INT32_MIN, 1, 0, 0, INT32_MIN]
    #   _rpower_scalar(same, scalar=2) -> [0, 1, 4, 8, 0]
    #   _power_scalar(same, scalar=-1) -> [-1, INT32_MIN, 0, 0, 0]
    a = nd.array([2, 3, -1, 0, 1, -2], dtype="int64")
    b = nd.array([-1, -2, -2, -1, -3, -1], dtype="int64")
    lo64, lo32 = np.iinfo(np.int64).min, np.iinfo(np.int32).min
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(nd._internal._power(a, b).asnumpy(), [0, 0, 1, lo64, 1, 0])
        np.testing.assert_array_equal(nd.broadcast_power(a, b).asnumpy(), [0, 0, 1, lo64, 1, 0])
        x = nd.array([-1, 0, 2, 3, -2], dtype="int32")
        np.testing.assert_array_equal(nd._internal._rpower_scalar(x, scalar=0.5).asnumpy(),
                                      [lo32, 1, 0, 0, lo32])
        np.testing.assert_array_equal(nd._internal._rpower_scalar(x, scalar=2).asnumpy(),
                                      [0, 1, 4, 8, 0])
        np.testing.assert_array_equal(nd._internal._power_scalar(x, scalar=-1).asnumpy(),
                                      [-1, lo32, 0, 0, 0])
    np.testing.assert_array_equal(nd._internal._power(nd.array([3, 2], dtype="int32"),
                                                      nd.array([4, 10], dtype="int32")).asnumpy(),
                                  [81, 1024])


def test_moments_needs_axes():
    # mx.nd.moments(mx.nd.ones((1, 4))):  MXNetError: Empty axes is not supported, if you
    # would like to do global moments, please pass all axes to axes argument
    with pytest.raises(GpundaError, match="Empty axes is not supported"):
        nd.moments(nd.ones((1, 4)))
    m, v = nd.moments(nd.array([[1.0, 3.0]]), axes=(0, 1))
    np.testing.assert_allclose([m.asnumpy().item(), v.asnumpy().item()], [2.0, 1.0])


def test_norm_out_dtype_enum():
    # mx.nd.norm(mx.nd.ones((2, 3), dtype='int8'), ord=1, out_dtype='uint8'):  MXNetError:
    # Invalid Input: 'uint8', valid values are: {None, 'float16', 'float32', 'float64',
    # 'int32', 'int64', 'int8'}
    with pytest.raises(GpundaError, match="valid values"):
        nd.norm(nd.ones((2, 3), dtype="int8"), ord=1, out_dtype="uint8")


def test_dropout_axes_must_be_nonnegative_in_range():
    # mx.nd.Dropout(mx.nd.ones((1, 2, 5, 5)), axes=(3, -1)) in training:
    #   MXNetError: Check failed: i >= 0 && i < ndim(): index = -1 must be in range [0, 4)
    with pytest.raises(GpundaError, match="axes"):
        nd.Dropout(nd.ones((1, 2, 5, 5)), axes=(3, -1))
    with mx.autograd.train_mode():
        y = nd.Dropout(nd.ones((1, 2, 5, 5)), p=0.5, axes=(3,))
    m = y.asnumpy()
    # the mask is shared along axis 3: each row is all zeros or all 2s
    assert set(np.unique(m)) <= {0.0, 2.0}
    assert (m == m[..., :1]).all()


def test_svm_output_label_shape():
    # MXNet's SVMOutput: label has data's shape without its last axis;
    # nd.SVMOutput(data (2, 3, 6), label (2, 1, 1)):
    #   MXNetError: Shape inconsistent, Provided = [2,1,1], inferred shape=[2,3]
    data = nd.ones((2, 3, 6))
    with pytest.raises(GpundaError, match="Shape inconsistent"):
        nd.SVMOutput(data, nd.zeros((2, 1, 1)))
    out = nd.SVMOutput(data, nd.zeros((2, 3)))
    np.testing.assert_array_equal(out.asnumpy(), data.asnumpy())


# -- optimizer update ops: refused before any state is written ------------------------

def _states_unchanged(states, before):
    for s, b in zip(states, before):
        np.testing.assert_array_equal(s.asnumpy(), b)


def test_adam_update_integer_weight_refused_before_write():
    # mx.nd.adam_update(w, g, mean, var, lr=0.1) with int8 arrays:
    #   MXNetError: This operation only support floating point types not int8
    w, g, mean, var = (nd.ones((5,), dtype="int8") for _ in range(4))
    before = [mean.asnumpy(), var.asnumpy()]
    with pytest.raises(GpundaError, match="floating point"):
        nd.adam_update(w, g, mean, var, lr=0.1)
    _states_unchanged([mean, var], before)


def test_update_ops_need_one_dtype():
    # ElemwiseType<3, 1>: sgd_mom_update with a float64 mom and float32 weight is refused
    w, g = nd.ones((3,)), nd.ones((3,))
    mom = nd.ones((3,), dtype="float64")
    with pytest.raises(GpundaError, match="Type inconsistent"):
        nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9)
    np.testing.assert_array_equal(mom.asnumpy(), [1, 1, 1])


def test_mp_updates_need_float32_master_weight():
    # MP_InferType<2, 1, 3>: weight32 must be float32
    w, g = nd.ones((3,), dtype="float16"), nd.ones((3,), dtype="float16")
    w32 = nd.ones((3,), dtype="float64")
    with pytest.raises(GpundaError, match="Type inconsistent"):
        nd.mp_sgd_update(w, g, w32, lr=0.1)
    np.testing.assert_array_equal(w32.asnumpy(), [1, 1, 1])
    w32 = nd.ones((3,))
    out = nd.mp_sgd_update(w, g, w32, lr=0.5)
    assert out.dtype == np.float16
    np.testing.assert_allclose(w32.asnumpy(), [0.5, 0.5, 0.5])


def test_mp_lamb_phase1_needs_float16_weight():
    # mx.nd.mp_lamb_update_phase1 with five float32 arrays:
    #   MXNetError: Type inconsistent, Provided = float32, inferred type = float16
    w, g, mean, var, w32 = (nd.ones((5,)) for _ in range(5))
    before = [mean.asnumpy(), var.asnumpy()]
    with pytest.raises(GpundaError, match="Type inconsistent"):
        nd.mp_lamb_update_phase1(w, g, mean, var, w32, t=1, wd=0.1)
    _states_unchanged([mean, var], before)
    w16, g16 = nd.ones((5,), dtype="float16"), nd.ones((5,), dtype="float16")
    assert nd.mp_lamb_update_phase1(w16, g16, mean, var, w32, t=1, wd=0.1).dtype == np.float32


def test_mp_lamb_phase2_weight32_shape():
    # mp_lamb_update_phase2 with weight (3, 4) and weight32 (1, 4):  MXNetError: Check failed:
    # weight_shape[i] == weight32_shape[i] (3 vs. 1) : weight and g dimension size mismatch
    w, g = nd.ones((3, 4)), nd.ones((3, 4))
    r = nd.ones((1,))
    with pytest.raises(GpundaError, match="shape"):
        nd.mp_lamb_update_phase2(w, g, r, r, nd.ones((1, 4)), lr=0.5)


def test_mp_adamw_float64_refused_before_write():
    # _mp_adamw_update with float64 arrays:
    #   MXNetError: Type inconsistent, Provided = float64, inferred type = float32
    arrs = [nd.ones((3,), dtype="float64") for _ in range(6)]
    before = [a.asnumpy() for a in arrs[2:5]]
    with pytest.raises(GpundaError, match="Type inconsistent"):
        nd._internal._mp_adamw_update(*arrs, lr=0.1, eta=0.1)
    _states_unchanged(arrs[2:5], before)


def test_ftml_beta_range():
    # mx.nd.ftml_update(..., beta2=2.0, t=1):
    #   MXNetError: value 2 for Parameter beta2 exceed bound [0,1]
    w, g, d, v, z = (nd.ones((5,)) for _ in range(5))
    with pytest.raises(GpundaError, match="exceed bound"):
        nd.ftml_update(w, g, d, v, z, lr=0.1, beta2=2.0, t=1)
    np.testing.assert_array_equal(d.asnumpy(), np.ones(5))


def test_adam_update_states_share_one_storage_type():
    # mx.nd.adam_update(w, g, mean.tostype('csr'), var, lr=2.0) (all (3, 4) float32):
    #   MXNetError: Check failed: state_stype == in_attrs->at(i) (2 vs. 0) : Inconsistent
    #   storage types detected in state 3
    w, g, var = nd.ones((3, 4)), nd.ones((3, 4)), nd.ones((3, 4))
    mean = nd.ones((3, 4)).tostype("csr")
    with pytest.raises(GpundaError, match="Inconsistent storage types"):
        nd.adam_update(w, g, mean, var, lr=2.0)
    _states_unchanged([mean, var], [np.ones((3, 4))] * 2)
    # a row_sparse gradient with dense states is MXNet's lazy update: only its rows change
    grad = nd.array([[1.0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]]).tostype("row_sparse")
    mean, var = nd.zeros((3, 4)), nd.zeros((3, 4))
    out = nd.adam_update(w, grad, mean, var, lr=0.1, epsilon=1e-8)
    m1, v1 = 0.1, 0.001       # (1 - beta1) * g, (1 - beta2) * g * g
    np.testing.assert_allclose(out.asnumpy()[0], 1 - 0.1 * m1 / (np.sqrt(v1) + 1e-8), rtol=1e-5)
    np.testing.assert_array_equal(out.asnumpy()[1:], 1.0)
    np.testing.assert_allclose(mean.asnumpy()[0], m1, rtol=1e-6)


def test_pdf_uniform_is_unchecked_reciprocal_width():
    # MXNet's PDF_Uniform is 1 / (high - low) without a support check:
    # _random_pdf_uniform(ones((2, 3)), low=[1, 3], high=[2, 1]) -> [[1, 1, 1], [-.5, -.5, -.5]]
    r = nd._internal._random_pdf_uniform(nd.ones((2, 3)), nd.array([1.0, 3.0]),
                                         nd.array([2.0, 1.0]))
    np.testing.assert_allclose(r.asnumpy(), [[1, 1, 1], [-0.5, -0.5, -0.5]])
