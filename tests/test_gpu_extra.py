"""``python -m gpunda info``'s CUDA lines: which extra fits the driver and whether the
installed CuPy does (gpunda/_tools/gpu_extra.py), and reading the driver's CUDA through NVML
without one (backends/discovery.py)."""
import sys
import types

import pytest

from gpunda._tools import gpu_extra
from gpunda.backends import discovery

C12 = [("cupy-cuda12x", "14.2.0")]
C13 = [("cupy-cuda13x", "14.2.0")]

# (driver's CUDA, installed CuPy, CuPy's runtime) -> (extra, fits, words of the CuPy line).
# The rule (CUDA's compatibility): a driver runs CUDA builds up to its own version, never newer.
CASES = [
    # no driver (no NVML): no extra to name; a CuPy cannot be judged
    (None, [], None, None, None, "CuPy: not installed"),
    (None, C12, None, None, None, "cannot run without an NVIDIA driver"),
    (None, C13, None, None, None, "cannot run without an NVIDIA driver"),
    # a CUDA 12 driver: gpu-cuda12; cupy-cuda13x needs a newer driver
    ((12, 4), [], None, "gpu-cuda12", False, "pip install 'gpunda[gpu-cuda12]'"),
    ((12, 4), C12, None, "gpu-cuda12", True, "fits"),
    ((12, 4), C13, None, "gpu-cuda12", False,
     "does NOT fit this driver (CUDA 12.4); pip uninstall cupy-cuda13x && "
     "pip install 'gpunda[gpu-cuda12]'"),
    # a CUDA 13 driver: gpu-cuda13; cupy-cuda12x still runs on it
    ((13, 0), [], None, "gpu-cuda13", False, "pip install 'gpunda[gpu-cuda13]'"),
    ((13, 0), C13, None, "gpu-cuda13", True, "(built for CUDA 13): fits"),
    ((13, 0), C12, None, "gpu-cuda13", True, "fits (the driver also runs older CUDA)"),
    # a driver newer than every extra: the newest extra
    ((14, 1), C13, None, "gpu-cuda13", True, "fits"),
    # a CUDA 11 driver: CuPy 14's wheels need a newer one
    ((11, 8), [], None, None, False, "CuPy: not installed"),
    ((11, 8), C12, None, None, False, "update the NVIDIA driver to >= 525"),
    ((11, 8), [("cupy-cuda11x", "13.6.0")], None, None, True, "fits"),
    # the runtime CuPy reports (read on a usable GPU) decides over the package name
    ((12, 8), [("cupy", "14.2.0")], None, "gpu-cuda12", None, "cannot tell whether it fits"),
    ((12, 8), [("cupy", "14.2.0")], (12, 8), "gpu-cuda12", True, "(CUDA runtime 12.8): fits"),
    ((12, 8), [("cupy", "14.2.0")], (13, 0), "gpu-cuda12", False, "does NOT fit"),
    # two CuPy packages overwrite each other's files
    ((13, 0), sorted(C12 + C13), None, "gpu-cuda13", False, "several packages installed"),
    ((13, 0), [("cupy-rocm-6-0", "14.0.0")], None, "gpu-cuda13", False, "ROCm"),
    # old per-minor names (cupy-cuda117)
    ((12, 0), [("cupy-cuda117", "9.6.0")], None, "gpu-cuda12", True, "fits"),
]


@pytest.mark.parametrize("driver,pkgs,runtime,extra,fits,words", CASES)
def test_advice_over_driver_and_cupy_package(driver, pkgs, runtime, extra, fits, words):
    a = gpu_extra.advise(driver, pkgs, runtime, driver_why="NVML: not found")
    assert (a.extra, a.fits) == (extra, fits), a.lines
    assert a.lines[0].startswith("CUDA driver: ")
    assert any(line.startswith("GPU extra: ") for line in a.lines)
    cupy_line = a.lines[-1]
    assert cupy_line.startswith("CuPy: ") and words in cupy_line, a.lines


def test_advice_names_the_extra_and_the_driver_floor():
    a = gpu_extra.advise((13, 0), C13)
    assert "CUDA driver: runs CUDA 13.0 and older (NVML)" in a.lines
    assert "GPU extra: gpunda[gpu-cuda13] (pip install 'gpunda[gpu-cuda13]')" in a.lines
    none = gpu_extra.advise(None, [], driver_why="NVML: NVMLError_LibraryNotFound")
    assert none.lines[0] == "CUDA driver: none found (NVML: NVMLError_LibraryNotFound)"
    assert "'gpunda[gpu-cuda13]' (CUDA 13, driver >= 580)" in none.lines[1]
    assert "'gpunda[gpu-cuda12]' (CUDA 12, driver >= 525)" in none.lines[1]


def test_every_extra_advised_is_declared_in_pyproject():
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    for major, extra in gpu_extra.EXTRAS.items():
        assert f'{extra} = ["cupy-cuda{major}x' in text


@pytest.mark.parametrize("name,build", [
    ("cupy-cuda12x", (12, None)), ("cupy_cuda13x", (13, None)), ("CuPy-CUDA11x", (11, None)),
    ("cupy-cuda102", (10, 2)), ("cupy-cuda117", (11, 7)), ("cupy", None),
    ("cupy-rocm-6-0", "rocm")])
def test_cupy_build_from_the_package_name(name, build):
    assert gpu_extra.cupy_build(name) == build


def test_installed_cupy_reads_package_metadata_without_importing_cupy(monkeypatch):
    from importlib import metadata

    def dist(name, version):
        return types.SimpleNamespace(metadata={"Name": name}, version=version)

    monkeypatch.setattr(metadata, "distributions", lambda: [
        dist("numpy", "2.1.0"), dist("cupy_cuda13x", "14.2.0"), dist("cupyx-tools", "1.0"),
        dist("nvidia-ml-py", "13.0")])
    monkeypatch.setitem(sys.modules, "cupy", None)      # importing it would raise
    assert gpu_extra.installed_cupy() == [("cupy-cuda13x", "14.2.0")]


def _fake_pynvml(monkeypatch, **attrs):
    mod = types.ModuleType("pynvml")
    mod.nvmlInit = lambda: None
    for k, v in attrs.items():
        setattr(mod, k, v)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    # NVML is the driver's library: nothing of CUDA (CuPy) may be needed or touched
    monkeypatch.setitem(sys.modules, "cupy", None)
    return mod


def test_driver_cuda_version_without_nvidia_ml_py(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    v, why = discovery.driver_cuda_version()
    assert v is None and why.startswith("nvidia-ml-py is not installed")


def test_driver_cuda_version_without_a_driver(monkeypatch):
    class NVMLError_LibraryNotFound(Exception):
        pass

    def init():
        raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")

    _fake_pynvml(monkeypatch, nvmlInit=init)
    v, why = discovery.driver_cuda_version()
    assert v is None
    assert why == "NVML: NVMLError_LibraryNotFound: NVML Shared Library Not Found"


def test_driver_cuda_version_reads_v2_then_the_first_form(monkeypatch):
    _fake_pynvml(monkeypatch, nvmlSystemGetCudaDriverVersion_v2=lambda: 13000,
                 nvmlSystemGetCudaDriverVersion=lambda: 99999)
    assert discovery.driver_cuda_version() == ((13, 0), "")
    _fake_pynvml(monkeypatch, nvmlSystemGetCudaDriverVersion=lambda: 12040)   # no _v2
    assert discovery.driver_cuda_version() == ((12, 4), "")

    def unsupported():
        raise RuntimeError("NVMLError_FunctionNotFound")

    _fake_pynvml(monkeypatch, nvmlSystemGetCudaDriverVersion_v2=unsupported)
    v, why = discovery.driver_cuda_version()
    assert v is None and "does not report" in why


def test_runtime_version_is_not_asked_without_a_usable_gpu(monkeypatch):
    monkeypatch.setattr(discovery, "probe", lambda: (0, "no device"))
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert discovery.cupy_runtime_cuda() is None


def test_info_prints_the_cuda_lines_without_nvml(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    from gpunda.__main__ import main
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "CUDA driver: none found (nvidia-ml-py is not installed" in out
    assert "GPU extra: none without an NVIDIA driver" in out
    assert "\nCuPy: " in out
