"""Test set-up: GPU detection once, ``@pytest.mark.gpu`` skipping, fresh state per test."""
import os
from pathlib import Path

import numpy as np
import pytest

from gpunda.backends import discovery

_N_GPUS, _WHY = discovery.probe()


def pytest_addoption(parser):
    parser.addoption(
        "--standin-gpu", action="store_true", default=False,
        help="run the suite with the default device on the test stand-in GPU (CuPy's rules "
             "on NumPy; needs cupy importable): GPUNDA_TEST_STANDIN_GPU=1 "
             "GPUNDA_DEFAULT_DEVICE=gpu")


def pytest_configure(config):
    global _N_GPUS, _WHY
    if config.getoption("--standin-gpu", False):
        os.environ["GPUNDA_TEST_STANDIN_GPU"] = "1"
        os.environ["GPUNDA_DEFAULT_DEVICE"] = "gpu"
        discovery._probe_result = None
        from gpunda import context
        context._reset_default_for_tests()
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
def standin_gpu():
    """``gpu(0)`` is the test stand-in (CuPy's rules on NumPy) in this test; skips without
    an importable CuPy. Yields the stand-in's array module."""
    pytest.importorskip("cupy", reason="the stand-in GPU reads CuPy's namespaces")
    from gpunda.backends import _standin
    with _standin.enabled():
        yield _standin.xp


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
