"""Test set-up: GPU detection once, ``@pytest.mark.gpu`` skipping, fresh state per test."""
import numpy as np
import pytest

from gpunda.backends import discovery

_N_GPUS, _WHY = discovery.probe()


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
