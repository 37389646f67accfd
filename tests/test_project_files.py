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
                                  "ci/gpu_check.sh", "docs/architecture.md", "docs/testing.md",
                                  "ci/wheel_smoke.sh"])
def test_docs_speak_of_the_project_only(path):
    text = (REPO / path).read_text()
    hits = [m.group(0) for m in _HISTORY.finditer(text)]
    assert not hits, f"{path}: {hits}"


def test_readme_is_the_users_page_and_links_the_docs_it_names():
    text = (REPO / "README.md").read_text()
    first, second = text.split("\n")[:2]
    # .ci/run executes line 2 verbatim; line 1 is the install-and-demo command
    assert first.strip().endswith("pip install -e . && python -m gpunda demo")
    assert second.strip().endswith("pip install -e '.[test]' && python -m pytest -q -n auto")
    extras = _pyproject()["project"]["optional-dependencies"]
    for extra in ("gpu-cuda12", "gpu-cuda13"):
        assert f"'.[{extra}]'" in text and extra in extras
    for doc in re.findall(r"docs/[\w-]+\.md", text):
        assert (REPO / doc).is_file(), doc
    assert "docs/architecture.md" in text
    # the internals live in docs/architecture.md, which keeps one op call and the layers
    arch = (REPO / "docs/architecture.md").read_text()
    for heading in ("## The path of one op call", "## Where each concern lives",
                    "## Calls that must go up: hooks"):
        assert heading in arch
    for doc in re.findall(r"docs/[\w-]+\.md", arch):
        assert (REPO / doc).is_file(), doc


def test_benchmarks_page_keeps_what_where_and_when():
    text = (REPO / "docs/benchmarks.md").read_text()
    assert re.search(r"## CPU run of 20\d\d-\d\d-\d\dT", text)          # when
    assert "Machine: " in text and "Versions: " in text                # where, with what
    assert "| w1_add_1: a + b, shape (1,) |" in text                   # what, figures kept


# ---- what a wheel or sdist carries (ci/wheel_smoke.sh builds and installs them for real)

def _pyproject():
    try:
        import tomllib
    except ImportError:        # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _package_files():
    """Every file of the gpunda package in the checkout (caches aside)."""
    return [p for p in (REPO / "gpunda").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def test_every_non_python_package_file_is_declared_package_data():
    # setuptools ships only the .py files of found packages and the package-data globs:
    # a data file read at run time (the demo's digits, their README) must match a glob
    import fnmatch
    globs = _pyproject()["tool"]["setuptools"]["package-data"]["gpunda"]
    data = [p.relative_to(REPO / "gpunda").as_posix() for p in _package_files()
            if p.suffix != ".py"]
    assert "data/digits.npz" in data
    undeclared = [f for f in data if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert not undeclared, f"package files no package-data glob ships: {undeclared}"


def test_every_folder_with_python_files_is_a_package_find_picks_up():
    # packages.find (not find_namespace) skips a folder without __init__.py, and with it
    # its modules; the include pattern must cover every package
    cfg = _pyproject()["tool"]["setuptools"]["packages"]["find"]
    assert cfg["include"] == ["gpunda*"]
    folders = {p.parent for p in _package_files() if p.suffix == ".py"}
    missing = sorted(str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").is_file())
    assert not missing, f"folders whose modules no wheel would carry: {missing}"


def test_demo_reads_its_data_from_inside_the_package():
    from gpunda._tools import demo
    data = Path(demo._DATA).resolve()
    assert data == (REPO / "gpunda" / "data" / "digits.npz").resolve() and data.is_file()


def test_the_mxnet_alias_hook_travels_in_sdist_and_wheel():
    manifest = (REPO / "MANIFEST.in").read_text().split("\n")
    assert "include gpunda_mxnet_alias.pth" in manifest          # the sdist has it
    setup = (REPO / "setup.py").read_text()
    assert '_PTH = "gpunda_mxnet_alias.pth"' in setup             # build_py copies it
    assert 'cmdclass={"build_py": BuildPyWithPth}' in setup
    line, = (REPO / "gpunda_mxnet_alias.pth").read_text().strip().splitlines()
    # site.py runs .pth lines that start with "import"; the hook is one such line
    assert line.startswith("import ") and "GPUNDA_AS_MXNET" in line and "install_from_env" in line
    from gpunda._tools import alias
    assert callable(alias.install_from_env)


def test_gpu_extras_one_per_cuda_major_and_gpu_kept():
    extras = _pyproject()["project"]["optional-dependencies"]
    assert extras["gpu"] == extras["gpu-cuda12"] == ["cupy-cuda12x", "nvidia-ml-py"]
    assert extras["gpu-cuda13"] == ["cupy-cuda13x", "nvidia-ml-py"]
    assert extras["standin"] == ["cupy-cuda12x>=14"]
    assert extras["standin-cuda13"] == ["cupy-cuda13x>=14"]


def test_wheel_smoke_script_is_valid_bash():
    import subprocess
    script = REPO / "ci" / "wheel_smoke.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    assert "set -euo pipefail" in text and "GPUNDA_AS_MXNET=1" in text
