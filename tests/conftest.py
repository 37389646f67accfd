"""Test set-up: GPU detection once, ``@pytest.mark.gpu`` skipping, fresh state per test."""
import os
from pathlib import Path

import numpy as np
import pytest

from gpunda.backends import discovery

_N_GPUS, _WHY = discovery.probe()


def _find_fixtures():
    """MXNet 1.9.1 fixtures: $GPUNDA_MXNET_FIXTURES, else shared/ beside the clone."""
    here = Path(__file__).resolve().parent.parent
    for cand in (os.environ.get("GPUNDA_MXNET_FIXTURES"), here.parent / "shared/fixtures/mxnet",
                 here / "shared/fixtures/mxnet", Path("/work/shared/fixtures/mxnet")):
        if cand and Path(cand, "FORMAT.md").exists():
            return str(cand)
    return str(here.parent / "shared/fixtures/mxnet")


# test modules read this at import time (conftest is imported first)
os.environ["GPUNDA_MXNET_FIXTURES"] = _find_fixtures()


def pytest_collection_modifyitems(config, items):
    if _N_GPUS:
        return
    skip = pytest.mark.skip(reason=f"no usable GPU: {_WHY}")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _reset_autograd_state():
    import gpunda.autograd as ag
    ag.set_recording(False)
    ag.set_training(False)
    yield
    ag.set_recording(False)
    ag.set_training(False)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def fake_gpu(monkeypatch):
    """``gpu(7)`` computing with the NumPy backend: a second memory space on a CPU-only
    machine, for tests of the errors that mixing a GPU with the CPU must raise."""
    import gpunda as mx
    from gpunda.backends import cpu_backend
    ctx = mx.gpu(7)
    monkeypatch.setattr(ctx, "_backend", cpu_backend())
    monkeypatch.setattr(ctx, "_xp", np)
    return ctx
