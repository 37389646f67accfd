"""mx.util: NumPy-shape semantics (global vs per-thread), NumPy-array scopes, env access."""
import os
import threading

import pytest

import gpunda as mx
from gpunda import util


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_np_shape_thread_local_and_global():
    try:
        assert util.set_np_shape(True) is False          # 1: this thread only
        assert util.is_np_shape() and not _in_thread(util.is_np_shape)
        assert util.set_np_shape(2) is True              # 2: every thread
        assert _in_thread(util.is_np_shape)
        assert util.set_np_shape(0) is True              # 0: off everywhere
        assert not util.is_np_shape() and not _in_thread(util.is_np_shape)
    finally:
        util.set_np_shape(0)


def test_np_shape_scope_and_decorator_on_class():
    with util.np_shape(True):
        assert mx.is_np_shape()
    assert not mx.is_np_shape()

    @util.use_np_shape
    class Probe:
        def read(self):
            return util.is_np_shape()

        @property
        def prop(self):
            return util.is_np_shape()
    assert Probe().read() and Probe().prop and not util.is_np_shape()
    with pytest.raises(TypeError, match="use_np_shape can only decorate"):
        util.use_np_shape(3)


def test_numpy_array_scope_is_per_thread():
    assert not util.is_np_array()
    with util.np_array(False):
        assert not util.is_np_array()
    util._NumpyArrayScope._current.value = util._NumpyArrayScope(True)
    try:
        assert util.is_np_array() and not _in_thread(util.is_np_array)
    finally:
        util._NumpyArrayScope._current.value = util._NumpyArrayScope(False)


def test_set_np_array_needs_np_shape():
    # MXNet 1.9.1: set_np(shape=False, array=True) -> ValueError: NumPy Shape semantics is
    # required in using NumPy array semantics.
    with util.np_array(True):
        assert util.is_np_array()
    assert not util.is_np_array()
    with pytest.raises(ValueError, match="required"):
        util.set_np(shape=False, array=True)
    util.set_np(shape=True, array=False)
    assert util.is_np_shape()
    util.reset_np()
    assert not util.is_np_shape()


def test_setenv_none_unsets_and_getenv():
    util.setenv("GPUNDA_T_UTIL", "x")
    assert util.getenv("GPUNDA_T_UTIL") == "x" == os.environ["GPUNDA_T_UTIL"]
    util.setenv("GPUNDA_T_UTIL", None)
    assert util.getenv("GPUNDA_T_UTIL") is None and "GPUNDA_T_UTIL" not in os.environ
    util.setenv("GPUNDA_T_UTIL", None)                 # unsetting twice is fine


def test_wrap_np_unary_func_checks_ufunc_keywords():
    f = util.wrap_np_unary_func(lambda x, out=None: x + 1)
    assert f(1) == 2 and f(1, where=True) == 2
    with pytest.raises(TypeError, match="invalid keyword"):
        f(1, foo=1)
    with pytest.raises(NotImplementedError, match="casting=safe"):
        f(1, casting="safe")
    with pytest.raises(TypeError, match="not understood"):
        f(1, casting="bogus")
    g = util.wrap_np_binary_func(lambda a, b, out=None: a * b)
    assert g(2, 3) == 6


def test_set_module_and_gpu_helpers():
    @util.set_module("mxnet.foo")
    def h():
        pass
    assert h.__module__ == "mxnet.foo"
    assert util.get_gpu_count() == mx.num_gpus()
    with pytest.raises(ValueError, match="gpu context"):
        util.get_cuda_compute_capability(mx.cpu())
