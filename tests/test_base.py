"""mxnet.base surface: data_dir, the error registry, ctypes helpers, the C-API stand-in."""
import ctypes
import json
import os

import pytest

import gpunda as mx
from gpunda import base


def test_mxnet_error_is_a_runtime_error():
    assert issubclass(mx.MXNetError, RuntimeError) and mx.MXNetError is mx.GpundaError


def test_data_dir_follows_mxnet_home(monkeypatch):
    monkeypatch.delenv("MXNET_HOME", raising=False)
    assert base.data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet")
    monkeypatch.setenv("MXNET_HOME", "/tmp/mxnet_data")
    assert base.data_dir() == "/tmp/mxnet_data"


def test_error_registry_and_c2pyerror():
    @base.register_error
    class MyTestError(RuntimeError):
        pass
    assert base.error_types["MyTestError"] is MyTestError
    msg, kind = base.c2pyerror("ValueError: bad value\nStack trace:\n  frame 1\n  frame 0\n")
    assert kind == "ValueError"
    assert msg == "Traceback (most recent call last):\n  frame 0\n  frame 1\nValueError: bad value"
    assert base.c2pyerror("no type here")[1] is None
    assert base.error_types["ValueError"] is ValueError


def test_check_call_raises_the_registered_class(monkeypatch):
    base.check_call(0)
    monkeypatch.setattr(type(base._LIB), "_last_error", "IndexError: out of range")
    with pytest.raises(IndexError, match="out of range"):
        base.check_call(-1)
    monkeypatch.setattr(type(base._LIB), "_last_error", "something broke")
    with pytest.raises(mx.MXNetError, match="something broke"):
        base.check_call(-1)


def test_ctypes_helpers():
    assert base.c_str("héllo").value == "héllo".encode("utf-8")
    arr = base.c_str_array(["a", "bc"])
    assert [arr[0], arr[1]] == [b"a", b"bc"]
    f = base.c_array(base.mx_float, [1, 2, 3])
    assert len(f) == 3 and f[1] == 2.0
    import array
    buf = array.array("f", [4, 5])
    assert base.c_array_buf(base.mx_float, buf)[1] == 5.0
    shared = base.ctypes2numpy_shared(ctypes.cast(f, base.mx_float_p), (3,))
    f[0] = 7
    assert shared.tolist() == [7.0, 2.0, 3.0]
    raw = (ctypes.c_char * 3).from_buffer_copy(b"xyz")
    assert base.ctypes2buffer(ctypes.cast(raw, ctypes.POINTER(ctypes.c_char)), 3) == bytearray(b"xyz")


def test_classproperty_with_setter():
    class Meta(base._ClassPropertyMeta):
        pass

    class Thing(base.with_metaclass(Meta, object)):
        _v = 1

        @base.classproperty
        def value(cls):
            return cls._v

        @value.setter
        def value(cls, v):
            cls._v = v * 10
    assert Thing.value == 1
    Thing.value = 2
    assert Thing.value == 20 and type(Thing) is Meta


def test_not_implemented_for_symbol_message():
    def foo():
        pass
    e = base.NotImplementedForSymbol(foo, "_plus", 1)
    assert str(e) == ("Function foo (namely operator \"_plus\") with arguments (<class 'int'>) "
                      "is not implemented for Symbol and only available in NDArray.")


def test_unsupported_c_entry_points_say_so():
    with pytest.raises(base.NotImplementedForGpunda, match="_LIB.MXSymbolCreateAtomicSymbol .*not supported"):
        base._LIB.MXSymbolCreateAtomicSymbol
    with pytest.raises(base.NotImplementedForGpunda, match="find_lib_path"):
        mx.libinfo.find_lib_path()


def test_lib_env_and_gpu_count():
    out = ctypes.c_char_p()
    base._LIB.MXSetEnv(base.c_str("GPUNDA_T_ENV"), base.c_str("7"))
    base._LIB.MXGetEnv(base.c_str("GPUNDA_T_ENV"), ctypes.byref(out))
    assert out.value == b"7" and os.environ["GPUNDA_T_ENV"] == "7"
    base._LIB.MXSetEnv(base.c_str("GPUNDA_T_ENV"), None)
    assert "GPUNDA_T_ENV" not in os.environ
    n = ctypes.c_int(-1)
    base.check_call(base._LIB.MXGetGPUCount(ctypes.byref(n)))
    assert n.value == mx.num_gpus()


def test_ndarray_handle_round_trip_through_dlpack_pointer():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]], ctx=mx.cpu())
    capsule = mx.nd.to_dlpack_for_read(x)
    ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
    ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = ctypes.c_void_p(ctypes.pythonapi.PyCapsule_GetPointer(capsule, b"dltensor"))
    handle = base.NDArrayHandle()
    base.check_call(base._LIB.MXNDArrayFromDLPack(ptr, ctypes.byref(handle)))
    ctypes.pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ctypes.pythonapi.PyCapsule_SetName(capsule, b"used_dltensor")   # ownership moved
    ctypes.pythonapi.PyCapsule_SetDestructor.argtypes = [ctypes.py_object, ctypes.c_void_p]
    ctypes.pythonapi.PyCapsule_SetDestructor(capsule, None)
    z = mx.nd.NDArray(handle=handle)
    assert z.asnumpy().tolist() == [[1, 2, 3], [4, 5, 6]]
    x[0, 0] = 9                           # the memory is shared
    assert z.asnumpy()[0, 0] == 9
    with pytest.raises(mx.MXNetError, match="does not name an array"):
        mx.nd.NDArray(handle=handle)      # taken once
    with pytest.raises(mx.MXNetError, match="needs a handle"):
        mx.nd.NDArray()


def test_check_call_without_a_last_error_names_the_code():
    base.check_call(0)
    with pytest.raises(mx.MXNetError, match="returned -1"):
        base.check_call(-1)


def test_c_array_and_buffer_share_or_hold_values():
    import array
    a = base.c_array(ctypes.c_int, [3, 1, 4])
    assert list(a) == [3, 1, 4] and a._type_ is ctypes.c_int
    buf = array.array("I", [7, 8])
    b = base.c_array_buf(ctypes.c_uint, buf)
    buf[0] = 9                      # shares the buffer's memory
    assert list(b) == [9, 8]


def test_handle_array_names_arrays_in_the_handle_table():
    x = mx.nd.array([1.0, 2.0])
    arr = base.c_handle_array([x])
    assert len(arr) == 1 and arr[0]
    assert mx.nd.NDArray(handle=arr[0]).asnumpy().tolist() == [1.0, 2.0]
    cb = base.MXCallbackList(2)
    assert cb.num_callbacks == 2 and [f for f, _ in cb._fields_] == [
        "num_callbacks", "callbacks", "contexts"]


def test_pythonapi_capsule_result_types_set_at_import():
    # MXNet's base sets them; ctypes code reading capsule pointers (MXNet's test_dlpack)
    # would otherwise truncate the pointer to a C int
    assert ctypes.pythonapi.PyCapsule_GetPointer.restype is ctypes.c_void_p
    assert ctypes.pythonapi.PyCapsule_New.restype is ctypes.py_object


# -- dtype forms: what MXNet 1.9.1 (NumPy 1.23) accepted as a dtype, on any NumPy ------

def test_np_dtype_reads_the_forms_mxnet_accepted():
    import numpy as np
    label = mx.nd.array([1, 2], dtype="int32")     # .dtype is numpy.int32 (a type)
    assert base.np_dtype(label) == np.int32
    assert base.np_dtype(mx.np.array([1], dtype="float16")) == np.float16
    for form, want in [(np.float16, "float16"), (np.dtype("int64"), "int64"), ("uint8", "uint8"),
                       (float, "float64"), (np.int32(7), "int32")]:
        assert base.np_dtype(form) == np.dtype(want)
    with pytest.raises(TypeError):      # NumPy never read an array as a dtype
        base.np_dtype(np.array([1.0], dtype="float16"))


@pytest.mark.filterwarnings("error::DeprecationWarning")   # NumPy 1.25/1.26 warn on this form
def test_an_array_passed_as_dtype_means_its_dtype():
    # Sockeye's loss does out.astype(label, copy=False); MXNet 1.9.1 gives label's dtype
    import numpy as np
    out, label = mx.nd.array([1.5, 2.5]), mx.nd.array([1, 2], dtype="int32")
    got = out.astype(label, copy=False)
    assert got.dtype == np.int32 and got.asnumpy().tolist() == [1, 2]
    assert mx.nd.zeros((2,), dtype=label).dtype == np.int32
    assert mx.nd.array([1, 2], dtype=label).dtype == np.int32
    assert mx.nd.cast(out, dtype=label).dtype == np.int32
    assert mx.np.zeros((2,), dtype=label).dtype == np.int32
    assert mx.np.array([1.0, 2.0]).astype(label).dtype == np.int32
    s = mx.sym.cast(mx.sym.var("x"), dtype=label)
    assert json.loads(s.tojson())["nodes"][1]["attrs"] == {"dtype": "int32"}   # as MXNet writes
    assert s.eval(x=out)[0].dtype == np.int32
    with pytest.raises(TypeError):      # a NumPy array is refused, as MXNet's NumPy did
        out.astype(np.array([1.0], dtype="float16"))


def test_op_name_prefix_helpers_match_mxnet():
    from gpunda import base as b
    # values from MXNet 1.9.1's mxnet.base
    assert [b._get_op_name_prefix(n) for n in ["_contrib_box_nms", "_random_uniform", "sum",
                                               "_sparse_retain"]] == \
        ["_contrib_", "_random_", "", "_sparse_"]
    assert b._output_is_list("_npi_split") and not b._output_is_list("split")
    assert b._is_np_op("_npx_relu")
    assert b._get_op_submodule_name("_npx__image_resize", "_npx_",
                                    b._NP_EXT_OP_SUBMODULE_LIST) == "_image_"
    assert b._find_error_type("ValueError: bad") == "ValueError"
    assert b._find_error_type("no colon") is None and b._find_error_type("a b: c") is None
    assert b._MXClassPropertyDescriptor is b._ClassProperty
    assert b._notify_shutdown() is None
    import pytest
    with pytest.raises(b.MXNetError, match="_init_op_module is not supported"):
        b._init_op_module("mxnet", "ndarray", None)
