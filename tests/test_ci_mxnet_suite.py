"""ci/mxnet_suite.py: the ratchet's list files (the harness itself runs in CI)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def ratchet():
    spec = importlib.util.spec_from_file_location("ci_mxnet_suite", ROOT / "ci" / "mxnet_suite.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_expected_list_parses(ratchet, tmp_path):
    p = tmp_path / "expected.txt"
    p.write_text("# header\ntest_a.py::test_x\ntest_a.py::test_y  # note\n\ntest_b.py::test_z\n")
    assert ratchet.read_expected(p) == {"test_a.py": {"test_x", "test_y"}, "test_b.py": {"test_z"}}
    p.write_text("test_a.py test_x\n")
    with pytest.raises(SystemExit, match="malformed"):
        ratchet.read_expected(p)


def test_gpu_exceptions_need_a_reason_and_a_listed_test(ratchet, tmp_path):
    expected = {"test_a.py": {"test_x", "test_y"}}
    p = tmp_path / "exc.txt"
    p.write_text("# why each one cannot run on a GPU\n"
                 "test_a.py::test_y needs MXNet's C++ engine # sic\n")
    assert ratchet.read_exceptions(expected, p) == {
        ("test_a.py", "test_y"): "needs MXNet's C++ engine # sic"}
    p.write_text("test_a.py::test_x\n")
    with pytest.raises(SystemExit, match=r"exc.txt:1: want 'file.py::test_name reason'"):
        ratchet.read_exceptions(expected, p)
    p.write_text("test_a.py::test_gone no longer listed\n")
    with pytest.raises(SystemExit, match="test_gone is not in"):
        ratchet.read_exceptions(expected, p)
    assert ratchet.read_exceptions(expected, tmp_path / "absent.txt") == {}


def test_the_repositorys_lists_parse(ratchet):
    expected = ratchet.read_expected()
    assert expected, "ci/mxnet-suite-expected.txt is empty"
    ratchet.read_exceptions(expected)       # raises on a malformed or stale line


def _k_picks(expr, collected):
    """The names pytest's own -k matcher (substring, case-insensitive) selects."""
    from _pytest.mark.expression import Expression
    e = Expression.compile(expr)
    return {n for n in collected if e.evaluate(lambda s, n=n, **_: s.lower() in n.lower())}


def test_exact_k_runs_only_the_listed_tests(ratchet):
    collected = {"test_slice", "test_slice_pooling2d", "test_Slice_like", "test_pad",
                 "test_pad_x"}
    expr = ratchet.exact_k({"test_slice", "test_pad_x"}, collected)
    assert expr == "(test_pad_x or test_slice) and not (test_Slice_like or test_slice_pooling2d)"
    assert _k_picks(expr, collected) == {"test_slice", "test_pad_x"}
    assert ratchet.exact_k({"test_a"}, {"test_a", "test_b"}) == "test_a"
    # test_a_b contains test_a but is inside the listed test_a_b_c: -k cannot leave it out
    collected = {"test_a", "test_a_b", "test_a_b_c"}
    expr = ratchet.exact_k({"test_a", "test_a_b_c"}, collected)
    assert _k_picks(expr, collected) == collected


def test_blas_threads_are_shared_among_parallel_files(ratchet, monkeypatch):
    monkeypatch.setattr(ratchet.os, "cpu_count", lambda: 2)
    env = ratchet.blas_threads_env(2, {"PATH": "/bin", "MKL_NUM_THREADS": "3"})
    assert env["OPENBLAS_NUM_THREADS"] == "1" and env["OMP_NUM_THREADS"] == "1"
    assert env["MKL_NUM_THREADS"] == "3" and env["PATH"] == "/bin"    # what was set stays
    assert ratchet.blas_threads_env(1, {})["OPENBLAS_NUM_THREADS"] == "2"


def test_files_start_longest_first_then_by_name(ratchet):
    order = ratchet.longest_first({"test_attr.py", "test_gluon.py", "test_base.py",
                                   "test_operator.py", "test_random.py"})
    assert order == ["test_operator.py", "test_gluon.py", "test_random.py", "test_attr.py",
                     "test_base.py"]
