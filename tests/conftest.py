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
    parser.addoption(
        "--run-slow", action="store_true", default=False,
        help="also run the tests marked slow (every model-zoo architecture, its ONNX round "
             "trips); the default run and CI leave them out")


def _fixture_candidates():
    """Where the MXNet 1.9.1 fixtures may be: ``$GPUNDA_MXNET_FIXTURES`` when set (and
    then only it, so pointing it at an empty folder shows what a clone without them
    does), else ``shared/fixtures/mxnet`` beside the clone or inside it."""
    here = Path(__file__).resolve().parent.parent
    given = os.environ.get("GPUNDA_MXNET_FIXTURES")
    if given:
        return [Path(given)]
    return [here.parent / "shared/fixtures/mxnet", here / "shared/fixtures/mxnet"]


_CANDIDATES = _fixture_candidates()
# the fixture folder, or None: they live outside the repository, and a clone without
# them skips the tests marked @pytest.mark.mxnet_fixtures (see below)
FIXTURES = next((str(c) for c in _CANDIDATES if (c / "FORMAT.md").exists()), None)
_FIXTURES_MISSING = ("needs the MXNet 1.9.1 fixtures, not found in "
                     + " or ".join(map(str, _CANDIDATES))
                     + " (set GPUNDA_MXNET_FIXTURES to their folder)")
# test modules read this at import time (conftest is imported first)
os.environ["GPUNDA_MXNET_FIXTURES"] = FIXTURES or str(_CANDIDATES[0])


def pytest_configure(config):
    global _N_GPUS, _WHY
    config.addinivalue_line("markers", "mxnet_fixtures: needs the MXNet 1.9.1 fixture files "
                                       "(outside the repository; skipped when absent)")
    if config.getoption("--standin-gpu", False):
        os.environ["GPUNDA_TEST_STANDIN_GPU"] = "1"
        os.environ["GPUNDA_DEFAULT_DEVICE"] = "gpu"
        discovery._probe_result = None
        from gpunda import context
        context._reset_default_for_tests()
        _N_GPUS, _WHY = discovery.probe()


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason=f"no usable GPU: {_WHY}")
    skip_fix = pytest.mark.skip(reason=_FIXTURES_MISSING)
    skip_slow = pytest.mark.skip(reason="slow: run with --run-slow")
    run_slow = config.getoption("--run-slow", False)
    for item in items:
        if not run_slow and item.get_closest_marker("slow") is not None:
            item.add_marker(skip_slow)
        if not _N_GPUS and item.get_closest_marker("gpu") is not None:
            item.add_marker(skip_gpu)
        if FIXTURES is None and item.get_closest_marker("mxnet_fixtures") is not None:
            item.add_marker(skip_fix)


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
