"""Files of the project itself: the license pyproject.toml names, and docs that speak of
the project only (what was measured, where and when)."""
import hashlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# sha256 of the Apache License 2.0 as published (https://www.apache.org/licenses/LICENSE-2.0.txt)
_APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_license_file_is_the_apache_2_text_pyproject_names():
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'license = {text = "Apache-2.0"}' in pyproject
    text = (REPO / "LICENSE").read_text()
    first, _, rest = text.partition("\n")
    assert re.fullmatch(r"Copyright 20\d\d the gpunda authors", first)
    assert hashlib.sha256(rest.encode()).hexdigest() == _APACHE_2_SHA256
    assert "include LICENSE" in (REPO / "MANIFEST.in").read_text()


# how the work was organised is no part of the project's documents
_HISTORY = re.compile(r"\b(this|the|a|that) session\b|\bsessions?\b|\bengineers?\b|"
                      r"\blent\b|\bissues? (#)?\d+|\bthe lead\b|\bthe brief\b", re.I)


@pytest.mark.parametrize("path", ["README.md", "docs/benchmarks.md", "bench/bench_kvstore.py",
                                  "ci/gpu_check.sh"])
def test_docs_speak_of_the_project_only(path):
    text = (REPO / path).read_text()
    hits = [m.group(0) for m in _HISTORY.finditer(text)]
    assert not hits, f"{path}: {hits}"


def test_benchmarks_page_keeps_what_where_and_when():
    text = (REPO / "docs/benchmarks.md").read_text()
    assert re.search(r"## CPU run of 20\d\d-\d\d-\d\dT", text)          # when
    assert "Machine: " in text and "Versions: " in text                # where, with what
    assert "| w1_add_1: a + b, shape (1,) |" in text                   # what, figures kept
