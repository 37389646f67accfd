"""MXNet's type inference refuses mixed input dtypes (NOTE [Uniform input dtypes]).

Every case here was checked on MXNet 1.9.1: the mixed calls raise MXNetError
("Incompatible attr ... expected int32, got float32"), the others keep MXNet's dtypes.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd


def _i32():
    return nd.array([1, 2, 3], dtype="int32")


def _f32():
    return nd.array([1, 2, 3])


MIXED = {
    "a + b": lambda a, b: a + b,
    "a - b": lambda a, b: a - b,
    "a * b": lambda a, b: a * b,
    "a / b": lambda a, b: a / b,
    "a % b": lambda a, b: a % b,
    "a ** b": lambda a, b: a ** b,
    "a == b": lambda a, b: a == b,
    "a > b": lambda a, b: a > b,
    "a += b": lambda a, b: a.__iadd__(b),
    "broadcast_add": nd.broadcast_add,
    "elemwise_add": nd.elemwise_add,
    "elemwise_sub": nd.elemwise_sub,
    "broadcast_maximum": nd.broadcast_maximum,
    "broadcast_hypot": nd.broadcast_hypot,
    "broadcast_logical_and": nd.broadcast_logical_and,
    "nd.add": nd.add,
    "nd.maximum": nd.maximum,
    "add_n": lambda a, b: nd.add_n(a, b),
    "dot": nd.dot,
    "where": lambda a, b: nd.where(nd.array([1, 0, 1]), a, b),
}


@pytest.mark.parametrize("name", sorted(MIXED))
@pytest.mark.parametrize("dtypes", [("int32", "float32"), ("float32", "float64"),
                                    ("float16", "float32"), ("int64", "int32")])
def test_mixed_dtypes_raise_naming_op_and_dtypes(name, dtypes):
    a = nd.array([1, 2, 3], dtype=dtypes[0])
    b = nd.array([1, 2, 3], dtype=dtypes[1])
    before = a.asnumpy().copy()
    with pytest.raises(GpundaError) as e:
        MIXED[name](a, b)
    msg = str(e.value)
    assert "same dtype" in msg and dtypes[0] in msg and dtypes[1] in msg, msg
    np.testing.assert_array_equal(a.asnumpy(), before)     # nothing written on the error


def test_the_message_names_the_operator_and_inputs():
    with pytest.raises(GpundaError, match=r"Operator broadcast_add: .*lhs is int32, rhs is float32"):
        _i32() + _f32()


def test_dense_and_convolution_refuse_mixed_dtypes():
    with pytest.raises(GpundaError, match="FullyConnected.*data is float64, weight is float32"):
        nd.FullyConnected(nd.ones((1, 3), dtype="float64"), nd.ones((2, 3)), nd.ones((2,)),
                          num_hidden=2)
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    with pytest.raises(GpundaError, match="FullyConnected"):
        net(nd.ones((1, 3), dtype="float64"))
    with pytest.raises(GpundaError, match="Convolution.*weight is float64"):
        nd.Convolution(nd.ones((1, 1, 3, 3)), nd.ones((1, 1, 1, 1), dtype="float64"),
                       kernel=(1, 1), num_filter=1, no_bias=True)
    with pytest.raises(GpundaError, match="batch_dot"):
        nd.batch_dot(nd.ones((1, 2, 2)), nd.ones((1, 2, 2), dtype="float64"))


def test_scalars_keep_the_array_dtype():
    # MXNet 1.9.1: the scalar is cast to the array dtype first (0.7 -> 0, 1.9 -> 1)
    a = _i32()
    for r, want in ((a + 1.5, [2, 3, 4]), (a * 1.5, [1, 2, 3]), (a / 2, [0, 1, 1]),
                    (a - 0.7, [1, 2, 3]), (1.5 - a, [0, -1, -2]), (a == 1.9, [1, 0, 0]), (a + np.float64(1.5), [2, 3, 4]), (a + True, [2, 3, 4]),
                    (nd.add(a, 1.5), [2, 3, 4])):
        assert r.dtype == np.int32
        assert r.asnumpy().tolist() == want


def test_ops_whose_extra_inputs_are_indices_take_any_dtype():
    f = _f32()
    assert nd.take(f, _i32()).dtype == np.float32
    assert nd.where(_i32(), f, f).dtype == np.float32
    assert nd.pick(nd.ones((2, 3)), nd.array([0, 1], dtype="int32")).dtype == np.float32


def test_same_dtypes_still_compute():
    a = _i32()
    assert (a + a).dtype == np.int32 and (a + a).asnumpy().tolist() == [2, 4, 6]
    assert (a / a).dtype == np.int32
    assert (a == a).asnumpy().tolist() == [1, 1, 1]


def test_numpy_array_operands_are_a_type_error():
    # MXNet 1.9.1: "type <class 'numpy.ndarray'> not supported"
    f = _f32()
    for g in (lambda: f + np.ones(3), lambda: np.ones(3) + f, lambda: f - np.ones(3, np.int32),
              lambda: 2 * f == np.ones(3), lambda: f.__iadd__(np.ones(3))):
        with pytest.raises(TypeError):
            g()
