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
