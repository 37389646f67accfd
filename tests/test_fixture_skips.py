"""Tests that need files from outside the repository skip, with the reason, when the
files are absent (a clone without ../shared), instead of failing."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_fixture_tests_skip_with_reason_when_fixtures_are_absent(tmp_path):
    env = dict(os.environ, GPUNDA_MXNET_FIXTURES=str(tmp_path), PYTHONPATH=str(REPO))
    # one test of each kind of use: module-level mark, per-test mark, parametrized, helper
    ids = ["tests/test_model_fixtures.py::test_checkpoint_roundtrip",
           "tests/test_io.py::test_load_fixture_values_exact",
           "tests/test_symbol.py::test_json_fixture_cnn_lists",
           "tests/test_sparse.py::test_mxnet_fixture_parts_rebuild_bit_exact",
           "tests/gluon/test_block.py::test_symbolblock_imports_mxnet_fixture",
           "tests/ops/test_conv.py::test_cnn_fixture_attrs_are_accepted"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                        *ids], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "passed" not in out and "failed" not in out and "error" not in out.lower(), out
    assert f"needs the MXNet 1.9.1 fixtures, not found in {tmp_path}" in out
    assert "\n11 skipped" in out, out     # parametrized: 4 in test_io, 3 in test_model_fixtures
