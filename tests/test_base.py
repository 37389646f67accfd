"""gpunda.base: the error classes and MXNet's ctypes helpers."""
import array
import ctypes

import pytest

from gpunda import base
from gpunda.base import GpundaError, MXNetError, NotImplementedForGpunda


def test_check_call_raises_on_nonzero():
    base.check_call(0)
    with pytest.raises(MXNetError, match="returned -1"):
        base.check_call(-1)


def test_ctypes_helpers_hold_the_values():
    a = base.c_array(ctypes.c_int, [3, 1, 4])
    assert list(a) == [3, 1, 4] and a._type_ is ctypes.c_int
    buf = array.array("I", [7, 8])
    b = base.c_array_buf(ctypes.c_uint, buf)
    buf[0] = 9                      # shares the buffer's memory
    assert list(b) == [9, 8]
    assert base.c_str("héllo").value == "héllo".encode("utf-8")


def test_handle_helpers_are_refused():
    with pytest.raises(NotImplementedForGpunda, match="c_handle_array is not supported yet"):
        base.c_handle_array([])
    assert issubclass(NotImplementedForGpunda, GpundaError)
    cb = base.MXCallbackList(2)
    assert cb.num_callbacks == 2 and [f for f, _ in cb._fields_] == [
        "num_callbacks", "callbacks", "contexts"]
