"""The ONNX tests build many symbols: give each test its own name counters, so the
automatic names other test files expect (``l2normalization0``) stay theirs."""
import pytest

import gpunda as mx


@pytest.fixture(autouse=True)
def _own_name_counters():
    with mx.name.NameManager():
        yield
