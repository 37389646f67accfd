"""A name MXNet has that gpunda does not build yet still imports as a module attribute
probe, and every use names what is missing."""
import importlib

import pytest

import gpunda as mx
from gpunda.base import GpundaError


@pytest.mark.parametrize("name,attr,missing", [("numpy", "np", "no_such_function"),
                                                ("numpy_extension", "npx", "no_such_op")])
def test_numpy_interface_names_absent_raise_attribute_errors(name, attr, missing):
    mod = importlib.import_module(f"gpunda.{name}")
    assert getattr(mx, attr) is mod
    with pytest.raises(AttributeError, match=rf"'mxnet\.{name}' has no attribute '{missing}'"):
        getattr(mod, missing)
    with pytest.raises(AttributeError):
        mod.__wrapped__      # dunder lookups (pickle, inspect) stay AttributeErrors
    # probes written for both MXNet front ends see a missing name as absent
    assert getattr(mod, missing, None) is None and not hasattr(mod, missing)
    assert getattr(mod, "ndarray" if attr == "np" else "set_np") is not None


def test_contrib_amp_imports_as_mxnet():
    # MXNet's train/test_bucketing.py does `from mxnet.contrib.amp import amp` at the top;
    # AMP is built now (tests/contrib/test_contrib_amp.py): bad input is refused as MXNet does
    amp = mx.contrib.amp.amp
    from gpunda.contrib.amp import amp as imported
    assert imported is amp
    with pytest.raises(AssertionError, match="First argument to convert_model should be Symbol"):
        mx.contrib.amp.convert_model(None, {}, {})


def test_names_mxnet_np_lacks_say_mxnet_lacks_them_too():
    """mx.np and mx.npx build every name MXNet 1.9.1 has, so another name is an
    AttributeError that says MXNet does not have it either (and names NumPy's)."""
    with pytest.raises(AttributeError, match=r"numpy\.fft exists, but MXNet 1\.9\.1's "
                                             r"mxnet\.numpy does not have it either"):
        mx.np.fft
    with pytest.raises(AttributeError, match="^module 'mxnet.numpy' has no attribute 'nope'$"):
        mx.np.nope
    with pytest.raises(AttributeError, match="'mxnet.numpy_extension' has no attribute 'nope'"):
        mx.npx.nope
    assert not hasattr(mx.np, "fft") and callable(mx.np.nanmedian)   # MXNet has nanmedian
