"""Modules MXNet has and gpunda does not build yet import, and every use names what is missing."""
import importlib

import pytest

import gpunda as mx
from gpunda.base import GpundaError


@pytest.mark.parametrize("name,attr", [("numpy", "np"), ("numpy_extension", "npx")])
def test_numpy_interface_imports_and_refuses_use(name, attr):
    mod = importlib.import_module(f"gpunda.{name}")
    assert getattr(mx, attr) is mod
    with pytest.raises(GpundaError, match=rf"mxnet\.{name}\.zeros is not supported yet"):
        mod.zeros((2, 2))
    with pytest.raises(AttributeError):
        mod.__wrapped__      # dunder lookups (pickle, inspect) stay AttributeErrors
    # probes written for both MXNet front ends see the names as absent
    assert getattr(mod, "ndarray", None) is None and not hasattr(mod, "ndarray")


def test_contrib_amp_imports_and_refuses_use():
    # MXNet's train/test_bucketing.py does `from mxnet.contrib.amp import amp` at the top
    amp = mx.contrib.amp.amp
    from gpunda.contrib.amp import amp as imported
    assert imported is amp
    with pytest.raises(GpundaError, match=r"mxnet\.contrib\.amp\.amp\.init is not supported yet"):
        amp.init()
    with pytest.raises(GpundaError, match=r"mxnet\.contrib\.amp\.convert_model is not supported"):
        mx.contrib.amp.convert_model
