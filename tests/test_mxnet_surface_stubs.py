"""MXNet modules tied to its C++ library import and name themselves when used; the small
pure-Python ones (misc, ndarray_doc, symbol_doc) and the op-module names work."""
import importlib

import numpy as np
import pytest

import gpunda as mx


@pytest.mark.parametrize("path,name", [
    ("gpunda._ctypes.ndarray", "_imperative_invoke"), ("gpunda._ctypes.symbol", "_symbol_creator"),
    ("gpunda._ffi.function", "get_global_func"), ("gpunda._ffi._ctypes.types", "TypeCode"),
    ("gpunda.space", "ConfigSpace"), ("gpunda.torch", "_make_torch_function"),
    ("gpunda._global_var", "_set_ndarray_class")])
def test_c_library_stubs_raise_naming_themselves(path, name):
    obj = getattr(importlib.import_module(path), name)
    with pytest.raises(mx.MXNetError, match=f"{name} is not supported"):
        obj()


def test_ctypes_layer_classes_are_the_front_ends():
    # MXNet 1.9.1: mx._ctypes.ndarray.NDArrayBase is mx.nd._internal.NDArrayBase (the base
    # of every array), and the same for CachedOp and SymbolBase
    import gpunda._ctypes as c
    assert c.ndarray.NDArrayBase is mx.nd._internal.NDArrayBase is mx.nd.NDArray
    assert c.ndarray.CachedOp is mx.nd.CachedOp
    assert c.symbol.SymbolBase is mx.sym._internal.SymbolBase is mx.sym.Symbol
    assert isinstance(mx.nd.ones(2), c.ndarray.NDArrayBase)
    got = []
    c.ndarray._monitor_callback_wrapper(lambda *a: got.append(a))("x", "exp", 3, None)
    assert got == [("x", "exp", 3)]


def test_misc_factor_scheduler_matches_mxnet():
    from gpunda.misc import FactorScheduler
    f = FactorScheduler(2, 0.5)
    assert [f(i) for i in range(5)] == [0.01, 0.01, 0.005, 0.005, 0.0025]   # MXNet 1.9.1
    with pytest.raises(ValueError):
        FactorScheduler(0)


def test_doc_builders():
    from gpunda import ndarray_doc, symbol_doc
    doc = ndarray_doc._build_doc("Reshape", "Reshapes.", ["data"], ["NDArray-or-Symbol"], ["x"])
    assert "data : NDArray\n" in doc and "x.reshape((2, 2))" in doc
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")    # a fixed name: the counter is global
    assert symbol_doc.SymbolDoc.get_output_shape(fc, x=(2, 5)) == {"fc_output": (2, 3)}


def test_legacy_op_spellings_run_the_op():
    a, b = mx.nd.array([1, 2]), mx.nd.array([3, 4])
    # values from MXNet 1.9.1
    np.testing.assert_array_equal(mx.nd._internal._Plus(a, b).asnumpy(), [4, 6])
    np.testing.assert_array_equal(mx.nd._internal._GreaterScalar(a, scalar=1.5).asnumpy(), [0, 1])
    np.testing.assert_array_equal(mx.nd.cumsum(mx.nd.array([[1, 2], [3, 4]]), axis=1).asnumpy(),
                                  [[1, 3], [3, 7]])
    s = mx.sym._internal._Greater(mx.sym.Variable("x"), mx.sym.Variable("y"))
    out = s.eval(x=a, y=mx.nd.array([2, 1]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [0, 1])


def test_generated_op_modules():
    assert mx.nd.gen_random.pdf_normal.op.name == "_random_pdf_normal"
    assert mx.sym.gen_random.uniform is not None and mx.nd.gen_op.reset_arrays is mx.nd.reset_arrays
    with pytest.raises(mx.MXNetError, match="_backward_Activation is not supported"):
        mx.nd._internal._backward_Activation(mx.nd.ones(2))
    with pytest.raises(mx.MXNetError, match="backward operators"):
        mx.sym.gen__internal._backward_FullyConnected()


def test_np_op_submodules_are_the_functions():
    import gpunda.numpy._op as np_op
    import gpunda.numpy_extension._op as npx_op
    import gpunda.symbol.numpy._op as sym_np_op
    assert np_op.sum is mx.np.sum and npx_op.relu is mx.npx.relu
    x = mx.sym.var("x").as_np_ndarray()
    out = sym_np_op.sum(x, axis=0).eval(x=mx.nd.array([[1, 2], [3, 4]]).as_np_ndarray())[0]
    np.testing.assert_array_equal(out.asnumpy(), [4, 6])
    import gpunda.symbol.numpy_extension as sym_npx
    y = sym_npx.relu(x).eval(x=mx.nd.array([-1, 2]).as_np_ndarray())[0]
    np.testing.assert_array_equal(y.asnumpy(), [0, 2])


def test_new_modules_stay_out_of_import_gpunda():
    import subprocess
    import sys
    code = ("import sys, gpunda; print(sorted(m for m in ('gpunda.rtc', 'gpunda.notebook', "
            "'gpunda._ffi', 'gpunda.contrib.text', 'gpunda.symbol_doc', 'gpunda.gluon.contrib.cnn', "
            "'gpunda.numpy_op_fallback') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_mxnet_module_paths_reexport_the_functions():
    import gpunda.numpy.multiarray as ma
    import gpunda.numpy._op as np_op
    import gpunda.symbol.symbol as sym_mod
    from gpunda.numpy.multiarray import add     # MXNet code imports them from there
    assert add is mx.np.add and ma.zeros_like is mx.np.zeros_like and np_op.tensordot is mx.np.tensordot
    np.testing.assert_array_equal(ma.arange(3).asnumpy(), [0, 1, 2])
    assert sym_mod.maximum is mx.sym.maximum and sym_mod._SIGNED_INT32_UPPER_LIMIT == 2 ** 31 - 1
    with pytest.raises(AttributeError):
        ma.no_such_function


def test_symbol_register_module():
    from gpunda.symbol import register
    assert mx.sym.register is register
    fc = register._make_symbol_function(None, "FullyConnected", "FullyConnected")
    assert fc is mx.sym.FullyConnected
    relu = register._make_symbol_function(None, "relu", "my_relu")
    assert relu.__name__ == "my_relu"
    out = relu(mx.sym.var("x")).eval(x=mx.nd.array([-1, 2]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [0, 2])
    legacy, npsym = mx.sym.var("x"), mx.sym.var("x").as_np_ndarray()
    register._verify_legacy_symbol("relu", "relu", legacy)
    register._verify_np_symbol("_npi_add", "add", npsym)
    with pytest.raises(TypeError, match="This is a numpy operator"):
        register._verify_np_symbol("_npi_add", "add", legacy)
    with pytest.raises(TypeError, match="This is a legacy operator"):
        register._verify_legacy_symbol("relu", "relu", npsym)
    with pytest.raises(mx.MXNetError, match="_generate_symbol_function_code is not supported"):
        register._generate_symbol_function_code(None, "relu", "relu")


def test_io_and_image_module_paths_reexport():
    from gpunda.io.io import CSVIter, MNISTIter  # noqa: F401 -- MXNet code imports them there
    from gpunda.image.image import CreateAugmenter, ImageIter
    assert CSVIter is mx.io.CSVIter and ImageIter is mx.image.ImageIter
    augs = CreateAugmenter((3, 4, 4), rand_mirror=True)
    assert any(isinstance(a, mx.image.HorizontalFlipAug) for a in augs)
